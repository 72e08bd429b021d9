// Fuzzes what `headwise serve` does with a request body before any model work: the
// OpenAI request parser (completions or chat, chosen by the first byte), chat template
// rendering of the parsed messages, and streaming text assembly with the parsed stop
// strings. Invariants: a rejection is a 400 with a message and a JSON error body; an
// accepted request respects the documented bounds; assembled text is the input
// (minus what follows a stop string).
// fuzz-sources: server/request.cpp server/chat_template.cpp server/text_assembler.cpp server/utf8.cpp
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/chat_template.hpp"
#include "server/request.hpp"
#include "server/text_assembler.hpp"

using namespace headwise::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  ParsedRequest r;
  const ApiError e = chat ? parse_chat_request(body, &r) : parse_completion_request(body, &r);
  if (e) {
    if (e.status != 400 || e.message.empty()) std::abort();
    if (nlohmann::json::parse(error_body(e), nullptr, false).is_discarded()) std::abort();
    return 0;
  }
  const SamplingParams& sp = r.sampling;
  if (sp.stop.size() > static_cast<size_t>(kMaxStopStrings) || sp.logprobs > kMaxTopLogprobs ||
      !(sp.temperature >= 0 && sp.temperature <= 2) || !(sp.top_p > 0 && sp.top_p <= 1) ||
      (sp.max_tokens != -1 && sp.max_tokens < 1))
    std::abort();
  for (const std::string& s : sp.stop)
    if (s.empty() || s.size() > kMaxStopLength) std::abort();
  if (chat) {
    if (r.messages.empty()) std::abort();
    for (ChatTemplate t : {ChatTemplate::chatml, ChatTemplate::llama3, ChatTemplate::llama2})
      (void)render_chat(t, r.messages);
  }
  // Stream the prompt text (or the last message) in 3-byte tokens through the stops.
  const std::string text = chat ? r.messages.back().content : r.prompt_text;
  TextAssembler ta(sp.stop);
  std::string out;
  bool stopped = false;
  for (size_t i = 0; i < text.size() && !stopped; i += 3) out += ta.push(text.substr(i, 3), &stopped);
  if (!stopped) {
    out += ta.flush();
    if (out != text) std::abort();
  } else if (text.compare(0, out.size(), out) != 0) {
    std::abort();
  }
  return 0;
}
