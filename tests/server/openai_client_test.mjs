// The official OpenAI client (npm 'openai', pinned in tests/node) drives headwise serve:
// completions and chat, streamed and not, on stories260K and on the "tiny" synthetic
// model. Greedy output must equal `headwise run` on the same prompt token for token
// (run prints the prompt's pieces, then the generated ones), streamed text must equal
// the whole response, usage must count the tokens exactly.
import * as h from './harness.mjs';

const a = h.args();

// ChatML as the Jinja templates of Qwen & co. write it (independent of server/).
const chatml = (msgs) => msgs.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') +
  '<|im_start|>assistant\n';

async function streamText(stream) {
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const ev of stream) {
    chunks++;
    if (ev.usage) usage = ev.usage;
    for (const c of ev.choices) {
      text += c.text ?? c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

async function stories() {
  const srv = await h.startServer(a, [...h.stories(a), '--threads', '1', '--chat-template', 'chatml']);
  const c = h.client(a, srv);
  const models = await c.models.list();
  h.check(models.data.length === 1 && models.data[0].id === 'stories260K', `models: ${JSON.stringify(models.data)}`);

  for (const [prompt, max] of [['Once upon a time', 60], ['Lily and Tom went to', 25], ['The cat', 1]]) {
    const r = await c.completions.create({ model: 'stories260K', prompt, max_tokens: max, temperature: 0 });
    const ch = r.choices[0];
    const ref = await h.headwiseRun(a, [...h.stories(a), '--prompt', prompt,
                                         '-n', String(r.usage.prompt_tokens + r.usage.completion_tokens - 1)]);
    h.check(prompt + ch.text === ref, `completion of '${prompt}':\n server: ${JSON.stringify(prompt + ch.text)}\n run:    ${JSON.stringify(ref)}`);
    h.check(r.usage.completion_tokens === max && ch.finish_reason === 'length',
            `usage ${JSON.stringify(r.usage)} / finish ${ch.finish_reason} for max_tokens ${max}`);
    h.check(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, 'total_tokens');

    const s = await streamText(await c.completions.create({
      model: 'stories260K', prompt, max_tokens: max, temperature: 0, stream: true, stream_options: { include_usage: true } }));
    h.check(s.text === ch.text, `streamed != whole for '${prompt}': ${JSON.stringify(s.text)}`);
    h.check(s.finish === 'length' && JSON.stringify(s.usage) === JSON.stringify(r.usage),
            `stream finish ${s.finish}, usage ${JSON.stringify(s.usage)} vs ${JSON.stringify(r.usage)}`);
    console.log(`completion ok: '${prompt}' + ${max} tokens (${s.chunks} stream events)`);
  }

  // Chat: the rendered ChatML prompt through `headwise run` gives the same text.
  const messages = [{ role: 'system', content: 'You tell short stories.' }, { role: 'user', content: 'Tell me about a dog.' }];
  const r = await c.chat.completions.create({ model: 'stories260K', messages, max_tokens: 40, temperature: 0 });
  const rendered = chatml(messages);
  const ref = await h.headwiseRun(a, [...h.stories(a), '--prompt', rendered,
                                       '-n', String(r.usage.prompt_tokens + r.usage.completion_tokens - 1)]);
  const msg = r.choices[0].message;
  h.check(msg.role === 'assistant' && rendered + msg.content === ref,
          `chat:\n server: ${JSON.stringify(msg.content)}\n run: ${JSON.stringify(ref.slice(rendered.length))}`);
  const s = await streamText(await c.chat.completions.create({ model: 'stories260K', messages, max_tokens: 40, temperature: 0, stream: true }));
  h.check(s.text === msg.content && s.finish === r.choices[0].finish_reason, `chat stream: ${JSON.stringify(s)}`);
  console.log(`chat ok: ${JSON.stringify(msg.content.slice(0, 60))}...`);

  // Stop strings: cut before the first occurrence, finish_reason "stop", streamed the same.
  const full = (await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 60, temperature: 0 })).choices[0].text;
  const stop = ' in the';
  h.check(full.includes(stop), `reference text lacks the stop string: ${full}`);
  const cut = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 60, temperature: 0, stop: [stop, 'zzz'] });
  h.check(cut.choices[0].text === full.slice(0, full.indexOf(stop)) && cut.choices[0].finish_reason === 'stop',
          `stop: ${JSON.stringify(cut.choices[0])}`);
  const cs = await streamText(await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 60, temperature: 0, stop, stream: true }));
  h.check(cs.text === cut.choices[0].text && cs.finish === 'stop', `streamed stop: ${JSON.stringify(cs)}`);

  // Seeded sampling equals `headwise run` with the same temperature, top-p and seed.
  const sampled = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 30,
                                                temperature: 0.8, top_p: 0.9, seed: 42 });
  const sref = await new Promise((res) => import('node:child_process').then(({ execFile }) => execFile(a.headwise,
    ['run', ...h.stories(a), '--prompt', 'Once upon a time', '--temp', '0.8', '--top-p', '0.9', '--seed', '42',
     '-n', String(sampled.usage.prompt_tokens + sampled.usage.completion_tokens - 1)], (e, out) => res(out.replace(/\n$/, '')))));
  h.check('Once upon a time' + sampled.choices[0].text === sref, `seeded sampling: ${sampled.choices[0].text} vs ${sref}`);

  // Logprobs: the greedy token is the most likely one; the tokens spell the text.
  const lp = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 3 });
  const L = lp.choices[0].logprobs;
  h.check(L.tokens.join('') === lp.choices[0].text && L.tokens.length === 8, `logprobs tokens ${JSON.stringify(L.tokens)}`);
  for (let i = 0; i < 8; i++) {
    const top = Object.values(L.top_logprobs[i]);
    h.check(top.length >= 1 && top.length <= 3 && Math.abs(Math.max(...top) - L.token_logprobs[i]) < 1e-6 && L.token_logprobs[i] <= 0,
            `logprobs at ${i}: ${JSON.stringify(L.top_logprobs[i])} vs ${L.token_logprobs[i]}`);
  }
  const clp = await c.chat.completions.create({ model: 'stories260K', messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2 });
  const content = clp.choices[0].logprobs.content;
  h.check(content.length === 5 && content.every((t) => t.top_logprobs.length === 2 && t.logprob === t.top_logprobs[0].logprob),
          `chat logprobs ${JSON.stringify(content[0])}`);

  // Errors the client surfaces as exceptions with the server's status.
  for (const [what, call, status] of [
    ['unknown model', () => c.completions.create({ model: 'gpt-4', prompt: 'x' }), 400],
    ['n = 2', () => c.completions.create({ model: 'stories260K', prompt: 'x', n: 2 }), 400],
    ['temperature 3', () => c.chat.completions.create({ model: 'stories260K', messages, temperature: 3 }), 400],
  ]) {
    let got = null;
    try { await call(); } catch (e) { got = e; }
    h.check(got && got.status === status && got.error?.message, `${what}: expected ${status}, got ${got?.status} ${got?.message}`);
  }
  const ex = await srv.stop();
  h.check(ex.code === 0, `stories server exit ${JSON.stringify(ex)}`);
}

async function synthetic() {
  // "tiny": random weights and a character tokenizer whose byte-fallback tokens show up
  // in its noise. `headwise run` prints such a lone byte only when it is printable or
  // space (llama2.c's safe_printf); the server sends the bytes. So the comparison is per
  // token: chat logprobs carry each token's exact bytes.
  const srv = await h.startServer(a, ['--synthetic', 'tiny', '--threads', '1', '--chat-template', 'chatml']);
  const c = h.client(a, srv);
  const printable = (b) => (b >= 0x20 && b < 0x7f) || (b >= 9 && b <= 13);
  for (const content of ['hello', 'abc def']) {
    const messages = [{ role: 'user', content }];
    const r = await c.chat.completions.create({ model: 'tiny', messages, max_tokens: 24, temperature: 0, logprobs: true });
    const toks = r.choices[0].logprobs.content;
    h.check(toks.length === r.usage.completion_tokens, `tiny: ${toks.length} logprob entries for ${r.usage.completion_tokens} tokens`);
    const shown = toks.map((t) => (t.bytes.length === 1 && !printable(t.bytes[0]) ? '' : Buffer.from(t.bytes).toString('latin1'))).join('');
    const rendered = chatml(messages);
    const ref = await h.headwiseRun(a, ['--synthetic', 'tiny', '--prompt', rendered,
                                         '-n', String(r.usage.prompt_tokens + r.usage.completion_tokens - 1)]);
    h.check(rendered + shown === ref, `tiny '${content}': ${JSON.stringify(shown)} vs ${JSON.stringify(ref.slice(rendered.length))}`);
    const s = await streamText(await c.chat.completions.create({ model: 'tiny', messages, max_tokens: 24, temperature: 0, stream: true }));
    h.check(s.text === r.choices[0].message.content, 'tiny streamed != whole');
    const p = await c.completions.create({ model: 'tiny', prompt: content, max_tokens: 24, temperature: 0 });
    h.check(p.usage.completion_tokens === 24, 'tiny completion usage');
  }
  const ex = await srv.stop();
  h.check(ex.code === 0, `tiny server exit ${JSON.stringify(ex)}`);

  // Without a template (and no --chat-template) chat is a clear 400.
  const bare = await h.startServer(a, ['--synthetic', 'tiny', '--threads', '1']);
  let got = null;
  try { await h.client(a, bare).chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }] }); } catch (e) { got = e; }
  h.check(got?.status === 400 && /chat template/.test(got.message), `chat without a template: ${got?.status} ${got?.message}`);
  h.check((await bare.stop()).code === 0, 'bare tiny server exit');
  console.log('synthetic tiny ok');
}

try {
  await h.within(240000, 'openai client test', (async () => { await stories(); await synthetic(); })());
  console.log('PASS');
  process.exit(0);
} catch (e) {
  h.fail(e.stack || String(e));
}
