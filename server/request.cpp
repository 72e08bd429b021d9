#include "server/request.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "graph/json_strict.hpp"

namespace headwise::server {
namespace {

using json = nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::number_float: return "number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    default: return "value";
  }
}

ApiError wrong_type(const std::string& field, const char* want, const json& got) {
  return bad_request("'" + field + "' must be " + want + ", got " + type_name(got), field);
}

// An integer field: JSON integers, or floats with an integral value (1.0), in [lo, hi].
ApiError get_int(const json& body, const char* field, long long lo, long long hi, bool* present,
                 long long* out) {
  *present = false;
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  long long v;
  if (it->is_number_integer() && !it->is_number_unsigned()) {
    v = it->get<long long>();
  } else if (it->is_number_unsigned()) {
    const unsigned long long u = it->get<unsigned long long>();
    if (u > static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
      return bad_request(std::string("'") + field + "' is out of range", field);
    v = static_cast<long long>(u);
  } else if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9e18 || d > 9e18)
      return wrong_type(field, "an integer", *it);
    v = static_cast<long long>(d);
  } else {
    return wrong_type(field, "an integer", *it);
  }
  if (v < lo || v > hi)
    return bad_request(std::string("'") + field + "' must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + std::to_string(v),
                       field);
  *present = true;
  *out = v;
  return {};
}

ApiError get_number(const json& body, const char* field, double lo, double hi, bool lo_open,
                    double* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_number()) return wrong_type(field, "a number", *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v > hi || v < lo || (lo_open && v == lo))
    return bad_request(std::string("'") + field + "' must be in " + (lo_open ? "(" : "[") +
                           std::to_string(lo) + ", " + std::to_string(hi) + "], got " + it->dump(),
                       field);
  *out = v;
  return {};
}

ApiError get_bool(const json& body, const char* field, bool* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_boolean()) return wrong_type(field, "a boolean", *it);
  *out = it->get<bool>();
  return {};
}

// The fields both endpoints share.
ApiError parse_common(const json& body, ParsedRequest* out) {
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("model", "a string", *it);
    out->model = it->get<std::string>();
  }
  if (ApiError e = get_bool(body, "stream", &out->stream)) return e;
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    if (ApiError e = get_bool(*it, "include_usage", &out->include_usage)) {
      e.param = "stream_options.include_usage";
      return e;
    }
  }
  SamplingParams& sp = out->sampling;
  if (ApiError e = get_bool(body, "ignore_eos", &sp.ignore_eos)) return e;
  double t = sp.temperature, p = sp.top_p;
  if (ApiError e = get_number(body, "temperature", 0, 2, false, &t)) return e;
  if (ApiError e = get_number(body, "top_p", 0, 1, true, &p)) return e;
  sp.temperature = static_cast<float>(t);
  sp.top_p = static_cast<float>(p);
  bool present = false;
  long long v = 0;
  if (ApiError e = get_int(body, "n", 1, 128, &present, &v)) return e;
  if (present && v != 1) return bad_request("'n' must be 1 (one choice per request), got " + std::to_string(v), "n");
  if (ApiError e = get_int(body, "seed", std::numeric_limits<long long>::min(),
                           std::numeric_limits<long long>::max(), &present, &v))
    return e;
  if (present) {
    sp.has_seed = true;
    sp.seed = static_cast<uint64_t>(v);
  }
  if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      sp.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > static_cast<size_t>(kMaxStopStrings))
        return bad_request("'stop' holds at most " + std::to_string(kMaxStopStrings) + " strings, got " +
                               std::to_string(it->size()),
                           "stop");
      for (const json& s : *it) {
        if (!s.is_string()) return wrong_type("stop", "a string or an array of strings", s);
        sp.stop.push_back(s.get<std::string>());
      }
    } else {
      return wrong_type("stop", "a string or an array of strings", *it);
    }
    for (const std::string& s : sp.stop)
      if (s.empty() || s.size() > kMaxStopLength)
        return bad_request("each 'stop' string must be 1 to " + std::to_string(kMaxStopLength) + " bytes",
                           "stop");
  }
  // Parameters that change the output and that headwise does not implement: refuse
  // rather than silently ignore.
  for (const char* f : {"presence_penalty", "frequency_penalty"}) {
    double x = 0;
    if (ApiError e = get_number(body, f, -2, 2, false, &x)) return e;
    if (x != 0) return bad_request(std::string("'") + f + "' is not supported (only 0)", f);
  }
  if (auto it = body.find("logit_bias"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("logit_bias", "an object", *it);
    if (!it->empty()) return bad_request("'logit_bias' is not supported", "logit_bias");
  }
  if (auto it = body.find("tools"); it != body.end() && !it->is_null())
    return bad_request("'tools' is not supported", "tools");
  return {};
}

ApiError parse_max_tokens(const json& body, const char* field, ParsedRequest* out) {
  bool present = false;
  long long v = 0;
  if (ApiError e = get_int(body, field, 1, std::numeric_limits<int>::max(), &present, &v)) return e;
  if (present) out->sampling.max_tokens = static_cast<int>(v);
  return {};
}

ApiError parse_object(const std::string& body, json* j) {
  // Strict (graph/json_strict.hpp): a body nested 100,000 deep would overflow the stack
  // when nlohmann frees it, and a duplicate key would be read as its last value.
  const Status s = graph::parse_json_strict(body.data(), body.data() + body.size(), "the request body", j);
  if (!s.ok()) {
    // A value the JSON parser itself refuses (1e999, NaN, bad UTF-8) under a top-level
    // key: name that field as the param, as the checks below do.
    const std::string& m = s.message();
    const size_t at = m.find("malformed JSON at '");
    std::string field;
    if (at != std::string::npos) {
      const size_t b = at + 19, e = m.find('\'', b);
      if (e != std::string::npos) field = m.substr(b, e - b);
      if (field.find_first_of(".[") != std::string::npos) field = field.substr(0, field.find_first_of(".["));
    }
    return bad_request(m, field);
  }
  if (!j->is_object()) return bad_request(std::string("the request body must be a JSON object, got ") + type_name(*j));
  return {};
}

ApiError token_array(const json& a, std::vector<int32_t>* out) {
  for (const json& t : a) {
    if (!t.is_number_integer()) return wrong_type("prompt", "a string or an array of token ids", t);
    const long long v = t.get<long long>();
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
      return bad_request("token id " + std::to_string(v) + " in 'prompt' is out of range", "prompt");
    out->push_back(static_cast<int32_t>(v));
  }
  return {};
}

}  // namespace

ApiError parse_completion_request(const std::string& body, ParsedRequest* out) {
  json j;
  if (ApiError e = parse_object(body, &j)) return e;
  out->chat = false;
  out->sampling.max_tokens = 16;  // OpenAI's default for completions
  if (ApiError e = parse_common(j, out)) return e;
  if (ApiError e = parse_max_tokens(j, "max_tokens", out)) return e;
  bool present = false;
  long long v = 0;
  if (ApiError e = get_int(j, "logprobs", 0, kMaxTopLogprobs, &present, &v)) return e;
  if (present) out->sampling.logprobs = static_cast<int>(v);
  if (ApiError e = get_int(j, "best_of", 1, 128, &present, &v)) return e;
  if (present && v != 1) return bad_request("'best_of' must be 1", "best_of");
  bool echo = false;
  if (ApiError e = get_bool(j, "echo", &echo)) return e;
  if (echo) return bad_request("'echo' is not supported", "echo");
  if (auto it = j.find("suffix"); it != j.end() && !it->is_null())
    return bad_request("'suffix' is not supported", "suffix");

  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
  const json& p = *it;
  if (p.is_string()) {
    out->prompt_text = p.get<std::string>();
  } else if (p.is_array()) {
    if (p.empty()) return bad_request("'prompt' is an empty array", "prompt");
    if (p[0].is_string() || p[0].is_array()) {  // a batch of prompts: one only (n = 1)
      if (p.size() != 1)
        return bad_request("'prompt' holds " + std::to_string(p.size()) +
                               " prompts; send one prompt per request",
                           "prompt");
      if (p[0].is_string()) {
        out->prompt_text = p[0].get<std::string>();
      } else {
        if (p[0].empty()) return bad_request("'prompt' is an empty array", "prompt");
        out->prompt_is_tokens = true;
        if (ApiError e = token_array(p[0], &out->prompt_tokens)) return e;
      }
    } else {
      out->prompt_is_tokens = true;
      if (ApiError e = token_array(p, &out->prompt_tokens)) return e;
    }
  } else {
    return wrong_type("prompt", "a string or an array of token ids", p);
  }
  return {};
}

ApiError parse_chat_request(const std::string& body, ParsedRequest* out) {
  json j;
  if (ApiError e = parse_object(body, &j)) return e;
  out->chat = true;
  if (ApiError e = parse_common(j, out)) return e;
  if (ApiError e = parse_max_tokens(j, "max_tokens", out)) return e;
  if (ApiError e = parse_max_tokens(j, "max_completion_tokens", out)) return e;
  bool want_logprobs = false;
  if (ApiError e = get_bool(j, "logprobs", &want_logprobs)) return e;
  bool present = false;
  long long v = 0;
  if (ApiError e = get_int(j, "top_logprobs", 0, kMaxTopLogprobs, &present, &v)) return e;
  if (present && !want_logprobs) return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  if (want_logprobs) out->sampling.logprobs = present ? static_cast<int>(v) : 0;

  auto it = j.find("messages");
  if (it == j.end() || it->is_null()) return bad_request("'messages' is required", "messages");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return bad_request("'messages' is empty", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return wrong_type(where, "an object", m);
    auto r = m.find("role");
    if (r == m.end() || !r->is_string()) return bad_request(where + ".role must be a string", where + ".role");
    ChatMessage msg;
    msg.role = r->get<std::string>();
    if (msg.role == "developer") msg.role = "system";  // OpenAI's newer name for it
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant")
      return bad_request(where + ".role '" + msg.role + "' is not supported (system, user, assistant)",
                         where + ".role");
    auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
      if (msg.role != "assistant") return bad_request(where + ".content is required", where + ".content");
    } else if (c->is_string()) {
      msg.content = c->get<std::string>();
    } else if (c->is_array()) {  // content parts: text only
      for (const json& part : *c) {
        if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return bad_request(where + ".content parts must be {\"type\": \"text\", \"text\": string}",
                             where + ".content");
        msg.content += part["text"].get<std::string>();
      }
    } else {
      return wrong_type(where + ".content", "a string or an array of text parts", *c);
    }
    out->messages.push_back(std::move(msg));
  }
  return {};
}

std::string error_body(const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json() : json(e.param)},
              {"code", e.code.empty() ? json() : json(e.code)}};
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace headwise::server
