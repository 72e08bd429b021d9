// A GGUF file's tokenizer.ggml.* metadata → tok::Config, with llama.cpp's meaning of
// each key: model "llama" (SentencePiece BPE by score, byte fallback, dummy-prefix
// space) or "gpt2" (byte-level BPE by merge rank, after the regexes of the
// `tokenizer.ggml.pre` type); token types (1 normal, 2 unknown, 3 control, 4 user
// defined, 5 unused, 6 byte); bos/eos/eot/eom/unk ids; add_bos/add_eos; chat template.
#include <algorithm>
#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "runtime/tokenizer_config.hpp"
#include "runtime/tokenizer_load.hpp"
#include "runtime/tokenizer_steps.hpp"

namespace headwise {
namespace {

using formats::GgufFile;
using formats::GgufType;
using formats::GgufValue;

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// llama.cpp's regexes per pre-tokenizer type (src/llama-vocab.cpp), applied in turn,
// each splitting the pieces of the previous one and keeping what it does not match.
struct PreType {
  const char* names;  // '|'-separated tokenizer.ggml.pre values
  std::vector<const char*> regexes;
  bool ignore_merges;
};

const std::vector<PreType>& pre_types() {
  static const char* const kLlama3 =
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const char* const kQwen2 =
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::vector<PreType> types = {
      {"default",
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
      {"gpt-2|gpt2|phi-2|roberta-bpe|jina-es|jina-de|jina-v1-en|jina-v2-es|jina-v2-de|jina-v2-code|gigachat",
       {tok::kGpt2Pattern},
       false},
      {"llama3|llama-v3|llama-bpe|falcon3|pixtral", {kLlama3}, true},
      {"qwen2|deepseek-r1-qwen|megrez", {kQwen2}, false},
  };
  return types;
}

const PreType* find_pre_type(const std::string& name) {
  for (const PreType& t : pre_types()) {
    const std::string names = std::string("|") + t.names + "|";
    if (names.find("|" + name + "|") != std::string::npos) return &t;
  }
  return nullptr;
}

Status string_array(const GgufFile& g, const std::string& key, std::vector<std::string>* out) {
  const GgufType elem = GgufType::string;
  const GgufValue* v = nullptr;
  HW_RETURN_IF_ERROR(g.get_arr(key, &elem, &v));
  out->assign(v->strings.begin(), v->strings.end());
  return Status::Ok();
}

Status opt_id(const GgufFile& g, const std::string& key, int32_t* out) {
  if (!g.has(key)) return Status::Ok();
  uint32_t v = 0;
  HW_RETURN_IF_ERROR(g.get_u32(key, &v));
  *out = int32_t(v);
  return Status::Ok();
}

}  // namespace

Status tokenizer_from_gguf(const GgufFile& g, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return invalid_argument("tokenizer_from_gguf(" + g.path() + "): null output pointer");
  const std::string& src = g.path();
  tok::Config c;
  c.source = src;
  std::string model;
  HW_RETURN_IF_ERROR(g.get_str("tokenizer.ggml.model", &model));
  HW_RETURN_IF_ERROR(string_array(g, "tokenizer.ggml.tokens", &c.pieces));
  const size_t n = c.pieces.size();
  if (n == 0) return format_error(src + ": tokenizer.ggml.tokens is empty");

  std::vector<int32_t> types(n, kNormal);
  if (g.has("tokenizer.ggml.token_type")) {
    const GgufValue* v = nullptr;
    HW_RETURN_IF_ERROR(g.get_arr("tokenizer.ggml.token_type", nullptr, &v));
    if (!v->is_numeric_array() || v->count != n)
      return format_error(src + ": tokenizer.ggml.token_type must be " + std::to_string(n) + " integers, got " + v->type_str() +
                          " of " + std::to_string(v->count));
    for (size_t i = 0; i < n; ++i) types[i] = int32_t(v->int_at(i));
  }
  if (g.has("tokenizer.ggml.scores")) {
    const GgufValue* v = nullptr;
    HW_RETURN_IF_ERROR(g.get_arr("tokenizer.ggml.scores", nullptr, &v));
    if (!v->is_numeric_array() || v->count != n)
      return format_error(src + ": tokenizer.ggml.scores must be " + std::to_string(n) + " numbers, got " + v->type_str() +
                          " of " + std::to_string(v->count));
    c.scores.resize(n);
    for (size_t i = 0; i < n; ++i) c.scores[i] = float(v->float_at(i));
  }

  bool add_bos = false, add_eos = false;
  if (model == "llama") {
    if (c.scores.empty()) return format_error(src + ": tokenizer.ggml.model 'llama' needs tokenizer.ggml.scores");
    c.model = tok::ModelKind::kSpmScores;
    c.piece_text = tok::PieceText::kSentencePiece;
    c.raw_bytes = true;
    c.byte_fallback = true;
    add_bos = true;
    bool add_space_prefix = true;
    HW_RETURN_IF_ERROR(g.opt_bool("tokenizer.ggml.add_space_prefix", &add_space_prefix));
    const std::string meta = "\xE2\x96\x81";
    if (add_space_prefix) c.normalizers.push_back({tok::NormalizerStep::kPrepend, meta, "", nullptr, false, false});
    c.normalizers.push_back({tok::NormalizerStep::kReplace, " ", meta, nullptr, false, false});
    c.strip_leading_space = add_space_prefix;
    c.unk_id = 0;
  } else if (model == "gpt2") {
    c.model = tok::ModelKind::kBpeRanks;
    c.piece_text = tok::PieceText::kByteLevel;
    std::string pre = "default";
    HW_RETURN_IF_ERROR(g.opt_str("tokenizer.ggml.pre", &pre));
    const PreType* pt = find_pre_type(pre);
    if (pt == nullptr)
      return unsupported(src + ": tokenizer.ggml.pre '" + pre +
                         "' is not supported (supported: default, gpt-2, llama-bpe/llama3, qwen2 and their aliases)");
    for (const char* re : pt->regexes) {
      tok::PreTokenizerStep s;
      HW_RETURN_IF_ERROR(tok::Regex::compile(re, src + ": tokenizer.ggml.pre " + pre, &s.regex));
      c.pre_tokenizers.push_back(std::move(s));
    }
    c.ignore_merges = pt->ignore_merges;
    std::vector<std::string> merges;
    HW_RETURN_IF_ERROR(string_array(g, "tokenizer.ggml.merges", &merges));
    c.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const size_t sp = merges[i].find(' ', 1);
      if (sp == std::string::npos)
        return format_error(src + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" + merges[i] + "' is not 'a b'");
      c.merges.emplace_back(merges[i].substr(0, sp), merges[i].substr(sp + 1));
    }
  } else {
    return unsupported(src + ": tokenizer.ggml.model '" + model + "' is not supported (supported: llama, gpt2)");
  }

  c.control.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = types[i];
    if (t == kUnknown || t == kControl || t == kUserDefined) {
      tok::AddedToken a;
      a.id = int32_t(i);
      a.content = c.pieces[i];
      a.special = t != kUserDefined;  // user-defined tokens are always matched
      if (!a.content.empty()) c.added.push_back(std::move(a));
      if (t != kUserDefined) c.control[i] = true;
    }
  }

  HW_RETURN_IF_ERROR(g.opt_bool("tokenizer.ggml.add_bos_token", &add_bos));
  HW_RETURN_IF_ERROR(g.opt_bool("tokenizer.ggml.add_eos_token", &add_eos));
  int32_t eos = -1, eot = -1, eom = -1, unk = c.unk_id;
  HW_RETURN_IF_ERROR(opt_id(g, "tokenizer.ggml.bos_token_id", &c.bos_id));
  HW_RETURN_IF_ERROR(opt_id(g, "tokenizer.ggml.eos_token_id", &eos));
  HW_RETURN_IF_ERROR(opt_id(g, "tokenizer.ggml.eot_token_id", &eot));
  HW_RETURN_IF_ERROR(opt_id(g, "tokenizer.ggml.eom_token_id", &eom));
  HW_RETURN_IF_ERROR(opt_id(g, "tokenizer.ggml.unknown_token_id", &unk));
  if (model == "llama" && (unk < 0 || size_t(unk) >= n)) unk = -1;
  c.unk_id = unk;
  for (int32_t id : {eos, eot, eom})
    if (id >= 0) c.eos_ids.push_back(id);
  for (size_t i = 0; i < n; ++i)
    if (c.control[i] && tok::is_end_of_turn_text(c.pieces[i])) c.eos_ids.push_back(int32_t(i));
  std::sort(c.eos_ids.begin(), c.eos_ids.end());
  c.eos_ids.erase(std::unique(c.eos_ids.begin(), c.eos_ids.end()), c.eos_ids.end());
  if (add_bos) {
    if (c.bos_id < 0) return format_error(src + ": tokenizer.ggml.add_bos_token is true but there is no bos_token_id");
    c.prefix.push_back(c.bos_id);
  }
  if (add_eos) {
    if (eos < 0) return format_error(src + ": tokenizer.ggml.add_eos_token is true but there is no eos_token_id");
    c.suffix.push_back(eos);
  }
  HW_RETURN_IF_ERROR(g.opt_str("tokenizer.chat_template", &c.chat_template));
  return Tokenizer::from_config(std::move(c), out);
}

}  // namespace headwise
