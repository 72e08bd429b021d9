// What `headwise maps` and `headwise heads` share: finding the model the way
// `headwise run` does (MODEL, or stories260K from ../shared/models when present, or
// the hidden --synthetic NAME used by tests that must run without ../shared), the
// texts they score, and reading --text.
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "graph/input_file.hpp"
#include "headwise/model.hpp"
#include "tools/args.hpp"
#include "tools/builtin_model.hpp"

namespace headwise::tools {

constexpr const char* kMapsDefaultModel = "../shared/models/stories260K/stories260K.bin";
constexpr const char* kMapsDefaultTokenizer = "../shared/models/stories260K/tok512.bin";
constexpr const char* kMapsDefaultPrompt = "The animal did not cross the street because it was too tired";
// What `heads` scores when no --text is given: ordinary TinyStories-like prose, long
// enough for the per-row means to settle.
constexpr const char* kHeadsDefaultText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her dog, Max. One day, Lily saw a big red ball under a tree. She ran to the "
    "tree and picked up the ball. Max barked and wagged his tail. Lily and Max played with "
    "the ball all day. They were very happy.";

// Loads the model named by the arguments; on failure prints "headwise CMD: why" and
// returns false. `label` receives a short description for output.
inline bool load_model_arg(const char* cmd, const Args& a, std::shared_ptr<const Model>* model,
                           std::string* label) {
  Status s;
  if (a.has("synthetic")) {
    s = Model::synthetic(a.str("synthetic"), 20261129, model);
    *label = "synthetic " + a.str("synthetic") + " (random weights)";
  } else {
    if (!a.positional().empty() && a.positional()[0].empty()) {
      std::fprintf(stderr, "headwise %s: MODEL is an empty path\n", cmd);
      return false;
    }
    std::string path = a.positional().empty() ? "" : a.positional()[0];
    ModelOptions mo;
    mo.tokenizer = a.str("tokenizer");
    if (path.empty()) {
      if (std::FILE* f = std::fopen(kMapsDefaultModel, "rb")) {
        std::fclose(f);
        path = kMapsDefaultModel;
        if (mo.tokenizer.empty()) mo.tokenizer = kMapsDefaultTokenizer;
      }
    }
    if (path.empty()) {
      std::fprintf(stderr,
                   "headwise %s: %s is not here; using a BUILT-IN MODEL WITH RANDOM WEIGHTS, "
                   "whose heads have learnt nothing\n",
                   cmd, kMapsDefaultModel);
      s = builtin_model(model);
      *label = "built-in tiny (random weights)";
    } else {
      s = Model::load(path, mo, model);
      *label = path;
    }
  }
  if (s.ok() && !(*model)->tokenizer())
    s = invalid_argument(*label + ": no tokenizer; give one with --tokenizer FILE");
  if (!s.ok()) {
    std::fprintf(stderr, "headwise %s: %s\n", cmd, s.message().c_str());
    return false;
  }
  return true;
}

// The whole --text file: a regular file (not a FIFO or a device) of at most 64 MiB.
inline Status read_text_file(const std::string& path, std::string* out) {
  return graph::read_input_file(path, "--text file", uint64_t(64) << 20, out);
}

// Token ids of `text` with BOS, cut to the model's context.
inline std::vector<int32_t> encode_for(const Model& model, const std::string& text) {
  std::vector<int32_t> ids = model.tokenizer()->encode(text, true);
  if (int(ids.size()) > model.info().max_seq_len) ids.resize(model.info().max_seq_len);
  return ids;
}

// Length of the valid UTF-8 sequence starting at s[i], 0 when it is not one.
inline size_t utf8_len(const std::string& s, size_t i) {
  const unsigned char c = s[i];
  const size_t n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// A JSON string literal that is also safe inside an HTML <script> element: < > &
// are escaped (no "</script>" or "<!--" can appear), control characters too, and a
// byte that is not valid UTF-8 becomes U+FFFD.
inline std::string json_string(const std::string& s) {
  std::string o = "\"";
  char buf[8];
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const size_t n = utf8_len(s, i);
    if (n == 0) {
      o += "\\ufffd";
      ++i;
      continue;
    }
    if (n == 1 && (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7F)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else if (c == '"' || c == '\\') {
      o += '\\';
      o += char(c);
    } else {
      o.append(s, i, n);
    }
    i += n;
  }
  return o + "\"";
}

// A JSON number (shortest round-trip form is not needed: 17 significant digits), null
// for NaN or infinity, which JSON cannot hold.
inline std::string json_number(double v, int digits = 17) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace headwise::tools
