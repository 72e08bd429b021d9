// Chat templates rendered natively (no Jinja engine): the three families most chat
// models ship, recognised from the Jinja text of the model's tokenizer config, or
// chosen by name (`headwise serve --chat-template`).
#pragma once

#include <string>
#include <vector>

namespace headwise::server {

enum class ChatTemplate { none, chatml, llama3, llama2 };

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// "chatml", "llama3", "llama2" (also "mistral", "inst") → the template; else none.
ChatTemplate chat_template_from_name(const std::string& name);
const char* chat_template_name(ChatTemplate t);

// Recognises a template from its Jinja source by the markers each family writes:
// "<|im_start|>" (ChatML: Qwen, many fine-tunes), "<|start_header_id|>" (Llama 3),
// "[INST]" (Llama 2, Mistral). Anything else: none.
ChatTemplate detect_chat_template(const std::string& jinja);

// The prompt text for `messages`, ending with the assistant's turn opened (the
// generation prompt). BOS is not part of the text: the tokenizer adds it. Roles other
// than system/user/assistant are rejected by the request parser before this.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages);

}  // namespace headwise::server
