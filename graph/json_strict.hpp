// Parsing JSON from untrusted files. nlohmann::json keeps the last of duplicate keys
// silently, and its destructor and dump() recurse once per nesting level, so a deeply
// nested value overflows the stack. parse_json_strict() first runs nlohmann's SAX
// parser (iterative) to refuse both, then builds the value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "headwise/status.hpp"

namespace headwise::graph {

// Deeper than any description, safetensors header or tokenizer.json needs (they use
// fewer than 10 levels), shallow enough for every recursive walk of the value.
constexpr int kMaxJsonDepth = 64;

// `where` starts every message ("model.json", "x.safetensors: header"). Errors:
// malformed JSON (with the byte position), a duplicate key (named with its path,
// "settings.n_heads"), nesting deeper than max_depth.
Status parse_json_strict(const char* begin, const char* end, const std::string& where,
                         nlohmann::json* out, int max_depth = kMaxJsonDepth);

// A value for a message: its JSON, cut to `max_chars` ("..." marks the cut).
std::string json_brief(const nlohmann::json& v, size_t max_chars = 80);

}  // namespace headwise::graph
