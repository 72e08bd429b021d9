#include "server/chat_template.hpp"

namespace headwise::server {
namespace {

// The Llama 2 and Llama 3 reference templates strip each message (`| trim`, .strip()).
std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages)
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

std::string render_llama3(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages)
    out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

// Llama 2 (Meta's chat template): a leading system message goes inside the first user
// turn as <<SYS>>\n...\n<</SYS>>\n\n, that turn's whole content stripped; each exchange
// is "[INST] user [/INST] assistant </s>", and every [INST] opens with <s> (the first
// one is the tokenizer's BOS, so not text here).
std::string render_llama2(const std::vector<ChatMessage>& messages) {
  std::string out, system;
  size_t i = 0;
  bool has_system = false;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    has_system = true;
    i = 1;
  }
  bool first = true;
  for (; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "assistant") {
      out += " " + trim(m.content) + " </s>";
    } else {  // user (a later system message is shown as a user turn)
      std::string content = m.content;
      if (first && has_system) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
      if (!first) out += "<s>";
      out += "[INST] " + trim(content) + " [/INST]";
      first = false;
    }
  }
  return out;
}

}  // namespace

ChatTemplate chat_template_from_name(const std::string& name) {
  if (name == "chatml") return ChatTemplate::chatml;
  if (name == "llama3") return ChatTemplate::llama3;
  if (name == "llama2" || name == "mistral" || name == "inst") return ChatTemplate::llama2;
  return ChatTemplate::none;
}

const char* chat_template_name(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::chatml: return "chatml";
    case ChatTemplate::llama3: return "llama3";
    case ChatTemplate::llama2: return "llama2";
    case ChatTemplate::none: return "none";
  }
  return "none";
}

ChatTemplate detect_chat_template(const std::string& jinja) {
  if (jinja.find("<|im_start|>") != std::string::npos) return ChatTemplate::chatml;
  if (jinja.find("<|start_header_id|>") != std::string::npos) return ChatTemplate::llama3;
  if (jinja.find("[INST]") != std::string::npos) return ChatTemplate::llama2;
  return ChatTemplate::none;
}

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages) {
  switch (t) {
    case ChatTemplate::chatml: return render_chatml(messages);
    case ChatTemplate::llama3: return render_llama3(messages);
    case ChatTemplate::llama2: return render_llama2(messages);
    case ChatTemplate::none: return "";
  }
  return "";
}

}  // namespace headwise::server
