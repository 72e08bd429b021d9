#include "server/responses.hpp"

#include <nlohmann/json.hpp>

namespace headwise::server {
namespace {

using json = nlohmann::json;

// Token text may hold invalid UTF-8 (a byte-fallback piece alone): replaced by U+FFFD.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(int(c));
  return a;
}

json logprobs_json(const ResponseMeta& m, const std::vector<TokenLogprob>& lps, size_t text_offset0) {
  if (m.logprobs < 0) return nullptr;
  if (m.chat) {  // {"content": [{token, logprob, bytes, top_logprobs: [...]}]}
    json content = json::array();
    for (const TokenLogprob& t : lps) {
      json top = json::array();
      for (const auto& [tok, lp] : t.top) top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
      content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", bytes_of(t.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  // completions (legacy): parallel arrays, top_logprobs as {token: logprob} maps
  json tokens = json::array(), lp = json::array(), top = json::array(), offs = json::array();
  size_t off = text_offset0;
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    lp.push_back(t.logprob);
    json alt = json::object();
    for (const auto& [tok, l] : t.top) alt[tok] = l;
    top.push_back(alt);
    offs.push_back(off);
    off += t.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lp}, {"top_logprobs", top}, {"text_offset", offs}};
}

json usage(int p, int c) { return {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c}}; }

}  // namespace

std::string completion_body(const ResponseMeta& m, const std::string& text, const std::vector<TokenLogprob>& lps,
                            const std::string& finish_reason, int prompt_tokens, int completion_tokens) {
  json choice = {{"index", 0}, {"logprobs", logprobs_json(m, lps, 0)}, {"finish_reason", finish_reason}};
  if (m.chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  json r = {{"id", m.id},
            {"object", m.chat ? "chat.completion" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array({choice})},
            {"usage", usage(prompt_tokens, completion_tokens)}};
  return dump(r);
}

std::string stream_event(const ResponseMeta& m, const Chunk& c, bool first, const std::string& finish_reason) {
  json choice = {{"index", 0},
                 {"logprobs", c.logprobs.empty() ? json(nullptr) : logprobs_json(m, c.logprobs, 0)},
                 {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  if (m.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!c.text.empty() || (first && finish_reason.empty())) delta["content"] = c.text;
    choice["delta"] = delta;
  } else {
    choice["text"] = c.text;
  }
  json r = {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array({choice})}};
  return "data: " + dump(r) + "\n\n";
}

std::string stream_usage_event(const ResponseMeta& m, int p, int c) {
  json r = {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array()},
            {"usage", usage(p, c)}};
  return "data: " + dump(r) + "\n\n";
}

std::string stream_error_event(const ApiError& e) { return "data: " + error_body(e) + "\n\n"; }

std::string models_body(const std::string& model, int64_t created) {
  json r = {{"object", "list"},
            {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "headwise"}}})}};
  return dump(r);
}

}  // namespace headwise::server
