// Fuzzes chat template rendering (server/chat_template.cpp) directly, with any roles
// and any bytes as content (the request parser, fuzzed by server_request_fuzz, only
// ever hands it valid roles and UTF-8): recognising a template from a model's Jinja
// text, the name round trip, and rendering. Input: byte 0 picks the template (or, when
// its high bit is set, detection from the rest of the input as Jinja text); the rest
// is split at '\0' into messages, whose first byte picks the role.
// Invariants: detection follows the documented markers; every message's (trimmed)
// content is in the rendered text; the text grows linearly with the messages (no
// quadratic or unbounded output); chatml and llama3 end with the assistant's turn
// opened.
// fuzz-sources: server/chat_template.cpp
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "server/chat_template.hpp"

using namespace headwise::server;

namespace {

// The content as llama2/llama3 show it: without white space at either end (written
// apart from the renderer's own, as an oracle).
bool white(char c) { return c != '\0' && std::strchr(" \t\n\r\f\v", c) != nullptr; }
std::string stripped(std::string s) {
  while (!s.empty() && white(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && white(s[i])) ++i;
  return s.substr(i);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  ChatTemplate t;
  if (data[0] & 0x80) {
    t = detect_chat_template(rest);
    const bool chatml = rest.find("<|im_start|>") != std::string::npos;
    const bool llama3 = rest.find("<|start_header_id|>") != std::string::npos;
    const bool llama2 = rest.find("[INST]") != std::string::npos;
    const ChatTemplate want = chatml ? ChatTemplate::chatml
                              : llama3 ? ChatTemplate::llama3
                              : llama2 ? ChatTemplate::llama2
                                       : ChatTemplate::none;
    if (t != want) std::abort();
  } else {
    static const ChatTemplate all[] = {ChatTemplate::none, ChatTemplate::chatml, ChatTemplate::llama3,
                                       ChatTemplate::llama2};
    t = all[data[0] % 4];
  }
  if (chat_template_from_name(chat_template_name(t)) != t) std::abort();
  if (chat_template_from_name(rest) != ChatTemplate::none &&
      chat_template_name(chat_template_from_name(rest)) == std::string("none"))
    std::abort();

  static const char* roles[] = {"system", "user", "assistant", "tool"};
  std::vector<ChatMessage> messages;
  size_t bytes = 0;
  for (size_t b = 0; b <= rest.size();) {
    size_t e = rest.find('\0', b);
    if (e == std::string::npos) e = rest.size();
    const std::string piece = rest.substr(b, e - b);
    ChatMessage m;
    m.role = piece.empty() ? "user" : roles[static_cast<uint8_t>(piece[0]) % 4];
    m.content = piece.empty() ? "" : piece.substr(1);
    bytes += m.content.size();
    messages.push_back(std::move(m));
    b = e + 1;
  }

  const std::string out = render_chat(t, messages);
  if (t == ChatTemplate::none) {
    if (!out.empty()) std::abort();
    return 0;
  }
  // Each message adds its content, its role and at most ~64 bytes of markup; llama2
  // also repeats a leading system message once inside the first user turn.
  const size_t bound = 2 * bytes + 80 * messages.size() + 64;
  if (out.size() > bound) std::abort();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    // llama2 shows a leading system message inside the first user turn: when no user
    // turn follows, it is not rendered (Meta's template does the same).
    if (t == ChatTemplate::llama2 && i == 0 && m.role == "system") continue;
    const std::string want = t == ChatTemplate::chatml ? m.content : stripped(m.content);
    if (out.find(want) == std::string::npos) std::abort();
  }
  if (t == ChatTemplate::chatml && !ends_with(out, "<|im_start|>assistant\n")) std::abort();
  if (t == ChatTemplate::llama3 && !ends_with(out, "<|start_header_id|>assistant<|end_header_id|>\n\n"))
    std::abort();
  return 0;
}
