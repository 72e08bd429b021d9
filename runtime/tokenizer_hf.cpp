// Hugging Face tokenizer.json (+ tokenizer_config.json, generation_config.json) →
// tok::Config. Supported: model BPE (byte-level or with byte fallback); normalizers
// NFC/NFKC/NFD/NFKD, Prepend, Replace, Lowercase, Strip, Sequence; pre-tokenizers
// Split, ByteLevel, Metaspace, Digits, Sequence; post-processors TemplateProcessing,
// ByteLevel, RobertaProcessing, BertProcessing, Sequence; decoders ByteLevel, Metaspace,
// Replace, ByteFallback, Fuse, Strip, Sequence. Anything else is refused by name.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unordered_map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/input_file.hpp"
#include "graph/json_strict.hpp"
#include "runtime/tokenizer_config.hpp"
#include "runtime/tokenizer_load.hpp"
#include "runtime/tokenizer_steps.hpp"

namespace headwise {
namespace {

using nlohmann::json;
using tok::Config;

// tokenizer.json files of real models are up to ~20 MB; refuse absurd sizes before
// reading them into memory.
constexpr int64_t kMaxJsonBytes = int64_t(1) << 30;
constexpr int64_t kMaxVocab = int64_t(1) << 24;
// Ids no vocabulary or added token names, at most: real files number their tokens 0..n-1
// (a few leave reserved ids unused). The id table is sized by the largest id, so without
// this bound a 181-byte file naming one id 13,065,789 made 13 million empty pieces and
// their lookup tables (libFuzzer: over 2 GiB under ASan).
constexpr int64_t kMaxUnusedIds = int64_t(1) << 16;

const std::string kMeta = "\xE2\x96\x81";  // ▁

// Regular files only (a FIFO would block, a device never ends), at most kMaxJsonBytes.
Status read_file(const std::string& path, std::string* out) {
  return graph::read_input_file(path, "tokenizer file", uint64_t(kMaxJsonBytes), out);
}

std::string type_of(const json& j) {
  if (!j.is_object()) return "";
  const auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool get_bool(const json& j, const char* key, bool dflt) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
}

std::string get_str(const json& j, const char* key, const std::string& dflt = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : dflt;
}

// A Split/Replace pattern: {"String": s} (taken literally) or {"Regex": r}.
Status pattern_regex(const json& p, const std::string& where, std::string* literal,
                     std::shared_ptr<const tok::Regex>* regex) {
  if (!p.is_object()) return format_error(where + ".pattern: not an object");
  if (p.contains("Regex") && p["Regex"].is_string())
    return tok::Regex::compile(p["Regex"].get<std::string>(), where + ".pattern.Regex", regex);
  if (p.contains("String") && p["String"].is_string()) {
    *literal = p["String"].get<std::string>();
    return Status::Ok();
  }
  return format_error(where + ".pattern: neither String nor Regex");
}

std::string quote_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::strchr("\\^$.|?*+()[]{}-/#&~ ", c) && c != '\0') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

Status add_normalizer(const json& n, const std::string& where, Config* c) {
  if (n.is_null()) return Status::Ok();
  const std::string t = type_of(n);
  using N = tok::NormalizerStep;
  if (t == "Sequence") {
    if (!n.contains("normalizers") || !n["normalizers"].is_array()) return format_error(where + ": Sequence without normalizers");
    for (size_t i = 0; i < n["normalizers"].size(); ++i)
      HW_RETURN_IF_ERROR(add_normalizer(n["normalizers"][i], where + ".normalizers[" + std::to_string(i) + "]", c));
    return Status::Ok();
  }
  N s{N::kNfc, "", "", nullptr, false, false};
  if (t == "NFC") s.kind = N::kNfc;
  else if (t == "NFKC") s.kind = N::kNfkc;
  else if (t == "NFD") s.kind = N::kNfd;
  else if (t == "NFKD") s.kind = N::kNfkd;
  else if (t == "Lowercase") s.kind = N::kLowercase;
  else if (t == "Prepend") s.kind = N::kPrepend, s.text = get_str(n, "prepend");
  else if (t == "Strip") s.kind = N::kStrip, s.left = get_bool(n, "strip_left", true), s.right = get_bool(n, "strip_right", true);
  else if (t == "Replace") {
    s.kind = N::kReplace;
    s.replacement = get_str(n, "content");
    if (!n.contains("pattern")) return format_error(where + ": Replace without pattern");
    HW_RETURN_IF_ERROR(pattern_regex(n["pattern"], where, &s.text, &s.regex));
  } else {
    return unsupported(where + ": normalizer type '" + t +
                       "' is not supported (supported: NFC, NFKC, NFD, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)");
  }
  c->normalizers.push_back(std::move(s));
  return Status::Ok();
}

Status split_behavior(const std::string& b, const std::string& where, tok::PreTokenizerStep::Behavior* out) {
  using P = tok::PreTokenizerStep;
  if (b == "Isolated") *out = P::kIsolated;
  else if (b == "Removed") *out = P::kRemoved;
  else if (b == "MergedWithPrevious") *out = P::kMergedWithPrevious;
  else if (b == "MergedWithNext") *out = P::kMergedWithNext;
  else return unsupported(where + ": split behavior '" + b + "' is not supported");
  return Status::Ok();
}

Status add_pre_tokenizer(const json& p, const std::string& where, Config* c, bool* byte_level) {
  if (p.is_null()) return Status::Ok();
  const std::string t = type_of(p);
  using P = tok::PreTokenizerStep;
  if (*byte_level)
    return unsupported(where + ": a pre-tokenizer step after ByteLevel is not supported");
  if (t == "Sequence") {
    if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array()) return format_error(where + ": Sequence without pretokenizers");
    for (size_t i = 0; i < p["pretokenizers"].size(); ++i)
      HW_RETURN_IF_ERROR(add_pre_tokenizer(p["pretokenizers"][i], where + ".pretokenizers[" + std::to_string(i) + "]", c, byte_level));
    return Status::Ok();
  }
  P s;
  if (t == "Split") {
    std::string literal;
    if (!p.contains("pattern")) return format_error(where + ": Split without pattern");
    HW_RETURN_IF_ERROR(pattern_regex(p["pattern"], where, &literal, &s.regex));
    if (!s.regex) HW_RETURN_IF_ERROR(tok::Regex::compile(quote_regex(literal), where + ".pattern.String", &s.regex));
    HW_RETURN_IF_ERROR(split_behavior(get_str(p, "behavior", "Isolated"), where, &s.behavior));
    s.invert = get_bool(p, "invert", false);
  } else if (t == "ByteLevel") {
    s.kind = P::kByteLevel;
    s.add_prefix_space = get_bool(p, "add_prefix_space", true);
    s.use_regex = get_bool(p, "use_regex", true);
    *byte_level = true;
  } else if (t == "Metaspace") {
    s.kind = P::kMetaspace;
    s.replacement = get_str(p, "replacement", kMeta);
    s.split = get_bool(p, "split", true);
    const std::string scheme = get_str(p, "prepend_scheme", get_bool(p, "add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") s.prepend = P::kAlways;
    else if (scheme == "first") s.prepend = P::kFirst;
    else if (scheme == "never") s.prepend = P::kNever;
    else return unsupported(where + ": Metaspace prepend_scheme '" + scheme + "' is not supported");
  } else if (t == "Digits") {
    s.kind = P::kDigits;
    s.individual_digits = get_bool(p, "individual_digits", false);
  } else {
    return unsupported(where + ": pre-tokenizer type '" + t +
                       "' is not supported (supported: Split, ByteLevel, Metaspace, Digits, Sequence)");
  }
  c->pre_tokenizers.push_back(std::move(s));
  return Status::Ok();
}

struct Decoding {
  bool byte_level = false;
  bool strip_leading_space = false;
  bool byte_fallback = false;
  bool metaspace = false;
};

Status read_decoder(const json& d, const std::string& where, Decoding* out) {
  if (d.is_null()) return Status::Ok();
  const std::string t = type_of(d);
  if (t == "Sequence") {
    if (!d.contains("decoders") || !d["decoders"].is_array()) return format_error(where + ": Sequence without decoders");
    for (size_t i = 0; i < d["decoders"].size(); ++i)
      HW_RETURN_IF_ERROR(read_decoder(d["decoders"][i], where + ".decoders[" + std::to_string(i) + "]", out));
  } else if (t == "ByteLevel") {
    out->byte_level = true;
  } else if (t == "Metaspace") {
    const std::string scheme = get_str(d, "prepend_scheme", get_bool(d, "add_prefix_space", true) ? "always" : "never");
    if (scheme != "never") out->strip_leading_space = out->metaspace = true;
  } else if (t == "Strip") {
    if (get_str(d, "content") == " " && d.value("start", 0) >= 1) out->strip_leading_space = true;
  } else if (t == "ByteFallback") {
    out->byte_fallback = true;
  } else if (t == "Replace" || t == "Fuse") {
    // ▁ → space is how every SentencePiece-style piece decodes.
  } else {
    return unsupported(where + ": decoder type '" + t +
                       "' is not supported (supported: ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence)");
  }
  return Status::Ok();
}

// The token id of a special token's text (vocabulary or added tokens), -1 if none.
int32_t find_token(const Config& c, const std::unordered_map<std::string, int32_t>& ids, const std::string& s) {
  const auto it = ids.find(s);
  return it == ids.end() ? -1 : it->second;
}

Status read_post_processor(const json& p, const std::string& where, const std::unordered_map<std::string, int32_t>& ids,
                           Config* c, bool* seen) {
  if (p.is_null()) return Status::Ok();
  const std::string t = type_of(p);
  if (t == "Sequence") {
    if (!p.contains("processors") || !p["processors"].is_array()) return format_error(where + ": Sequence without processors");
    for (size_t i = 0; i < p["processors"].size(); ++i)
      HW_RETURN_IF_ERROR(read_post_processor(p["processors"][i], where + ".processors[" + std::to_string(i) + "]", ids, c, seen));
    return Status::Ok();
  }
  if (t == "ByteLevel") return Status::Ok();  // offsets only
  *seen = true;
  if (t == "TemplateProcessing") {
    if (!p.contains("single") || !p["single"].is_array()) return format_error(where + ": TemplateProcessing without single");
    const json& specials = p.contains("special_tokens") ? p["special_tokens"] : json::object();
    bool after = false;
    for (const json& item : p["single"]) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      if (!item.contains("SpecialToken") || !item["SpecialToken"].is_object())
        return format_error(where + ".single: an item is neither Sequence nor SpecialToken");
      const std::string name = get_str(item["SpecialToken"], "id");
      std::vector<int32_t> tids;
      if (specials.is_object() && specials.contains(name) && specials[name].contains("ids") && specials[name]["ids"].is_array()) {
        for (const json& v : specials[name]["ids"])
          if (v.is_number_integer()) tids.push_back(v.get<int32_t>());
      } else {
        const int32_t id = find_token(*c, ids, name);
        if (id < 0) return format_error(where + ": special token '" + name + "' is not in the vocabulary");
        tids.push_back(id);
      }
      auto& dst = after ? c->suffix : c->prefix;
      dst.insert(dst.end(), tids.begin(), tids.end());
    }
    return Status::Ok();
  }
  if (t == "RobertaProcessing" || t == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      if (!p.contains(key) || !p[key].is_array() || p[key].size() != 2 || !p[key][1].is_number_integer())
        return format_error(where + "." + key + ": expected [token, id]");
      (std::string(key) == "cls" ? c->prefix : c->suffix).push_back(p[key][1].get<int32_t>());
    }
    return Status::Ok();
  }
  return unsupported(where + ": post-processor type '" + t +
                     "' is not supported (supported: TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence)");
}

// bos_token / eos_token in tokenizer_config.json: a string or {"content": ...}.
std::string token_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) return get_str(j, "content");
  return "";
}

Status parse_model(const json& root, const std::string& src, Config* c, std::unordered_map<std::string, int32_t>* ids) {
  if (!root.is_object()) return format_error(src + ": not a JSON object");
  if (!root.contains("model") || !root["model"].is_object()) return format_error(src + ": no 'model' object");
  const json& m = root["model"];
  const std::string type = m.contains("type") ? get_str(m, "type") : "BPE";
  if (type != "BPE")
    return unsupported(src + ": model type '" + type + "' is not supported (supported: BPE)");
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0)
    return unsupported(src + ": model.dropout > 0 (random merges) is not supported");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!get_str(m, k).empty()) return unsupported(src + ": model." + k + " is not supported");
  if (!m.contains("vocab") || !m["vocab"].is_object()) return format_error(src + ": model.vocab is not an object");

  int64_t n = 0;
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it.value().is_number_integer()) return format_error(src + ": model.vocab['" + it.key() + "'] is not an integer");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= kMaxVocab) return format_error(src + ": model.vocab['" + it.key() + "'] = " + std::to_string(id) + " is out of range");
    n = std::max(n, id + 1);
  }
  const json empty = json::array();
  const json& added = root.contains("added_tokens") && root["added_tokens"].is_array() ? root["added_tokens"] : empty;
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
      return format_error(src + ": added_tokens[" + std::to_string(i) + "] needs an integer id and a string content");
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id >= kMaxVocab) return format_error(src + ": added_tokens[" + std::to_string(i) + "].id is out of range");
    n = std::max(n, id + 1);
  }
  const int64_t named = int64_t(m["vocab"].size() + added.size());
  if (n > named + kMaxUnusedIds)
    return format_error(src + ": token ids run up to " + std::to_string(n - 1) + " but model.vocab and added_tokens name " +
                        std::to_string(named) + " tokens (at most " + std::to_string(kMaxUnusedIds) +
                        " ids may be unused)");
  c->pieces.assign(size_t(n), std::string());
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    const int32_t id = it.value().get<int32_t>();
    c->pieces[id] = it.key();
    ids->emplace(it.key(), id);
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    tok::AddedToken t;
    t.id = a["id"].get<int32_t>();
    t.content = a["content"].get<std::string>();
    t.special = get_bool(a, "special", false);
    t.lstrip = get_bool(a, "lstrip", false);
    t.rstrip = get_bool(a, "rstrip", false);
    if (t.content.empty()) return format_error(src + ": added_tokens[" + std::to_string(i) + "] has empty content");
    if (c->pieces[t.id].empty()) c->pieces[t.id] = t.content;
    (*ids)[t.content] = t.id;
    c->added.push_back(std::move(t));
  }

  if (m.contains("merges") && !m["merges"].is_null()) {
    if (!m["merges"].is_array()) return format_error(src + ": model.merges is not an array");
    const json& merges = m["merges"];
    c->merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& e = merges[i];
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) return format_error(src + ": model.merges[" + std::to_string(i) + "] '" + s + "' is not 'a b'");
        c->merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        c->merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        return format_error(src + ": model.merges[" + std::to_string(i) + "] is neither 'a b' nor [a, b]");
      }
    }
  }
  c->model = tok::ModelKind::kBpeRanks;
  c->byte_fallback = get_bool(m, "byte_fallback", false);
  c->ignore_merges = get_bool(m, "ignore_merges", false);
  c->fuse_unk = get_bool(m, "fuse_unk", false);
  const std::string unk = get_str(m, "unk_token");
  if (!unk.empty()) {
    c->unk_id = find_token(*c, *ids, unk);
    if (c->unk_id < 0) return format_error(src + ": model.unk_token '" + unk + "' is not in the vocabulary");
  }
  return Status::Ok();
}

Status config_from_json(const json& root, const std::string& src, const json* tconfig, const json* gconfig,
                        Config* c) {
  c->source = src;
  std::unordered_map<std::string, int32_t> ids;
  HW_RETURN_IF_ERROR(parse_model(root, src, c, &ids));
  HW_RETURN_IF_ERROR(add_normalizer(root.value("normalizer", json()), src + ": normalizer", c));
  bool byte_level = false;
  HW_RETURN_IF_ERROR(add_pre_tokenizer(root.value("pre_tokenizer", json()), src + ": pre_tokenizer", c, &byte_level));
  Decoding dec;
  HW_RETURN_IF_ERROR(read_decoder(root.value("decoder", json()), src + ": decoder", &dec));
  c->piece_text = (byte_level || dec.byte_level) ? tok::PieceText::kByteLevel : tok::PieceText::kSentencePiece;
  c->raw_bytes = c->piece_text == tok::PieceText::kSentencePiece;
  c->strip_leading_space = dec.strip_leading_space;
  c->decode_byte_pieces = dec.byte_fallback;
  c->first_drops_all_meta = dec.metaspace;
  bool post_seen = false;
  HW_RETURN_IF_ERROR(read_post_processor(root.value("post_processor", json()), src + ": post_processor", ids, c, &post_seen));
  c->control.assign(c->pieces.size(), false);
  for (const tok::AddedToken& a : c->added)
    if (a.special) c->control[a.id] = true;

  // bos/eos: tokenizer_config.json, else what the template adds.
  std::string bos_text, eos_text;
  if (tconfig) {
    if (tconfig->contains("bos_token")) bos_text = token_text((*tconfig)["bos_token"]);
    if (tconfig->contains("eos_token")) eos_text = token_text((*tconfig)["eos_token"]);
    if (tconfig->contains("chat_template")) {
      const json& t = (*tconfig)["chat_template"];
      if (t.is_string()) {
        c->chat_template = t.get<std::string>();
      } else if (t.is_array()) {  // [{"name": "default", "template": ...}, ...]
        for (const json& e : t)
          if (e.is_object() && (c->chat_template.empty() || get_str(e, "name") == "default"))
            c->chat_template = get_str(e, "template");
      }
    }
  }
  if (!bos_text.empty()) c->bos_id = find_token(*c, ids, bos_text);
  if (c->bos_id < 0 && !c->prefix.empty()) c->bos_id = c->prefix.front();
  const int32_t eos = eos_text.empty() ? -1 : find_token(*c, ids, eos_text);
  if (eos >= 0) c->eos_ids.push_back(eos);
  if (gconfig && gconfig->contains("eos_token_id")) {
    const json& e = (*gconfig)["eos_token_id"];
    if (e.is_number_integer()) c->eos_ids.push_back(e.get<int32_t>());
    if (e.is_array())
      for (const json& v : e)
        if (v.is_number_integer()) c->eos_ids.push_back(v.get<int32_t>());
  }
  for (const tok::AddedToken& a : c->added)
    if (a.special && tok::is_end_of_turn_text(a.content)) c->eos_ids.push_back(a.id);
  std::sort(c->eos_ids.begin(), c->eos_ids.end());
  c->eos_ids.erase(std::unique(c->eos_ids.begin(), c->eos_ids.end()), c->eos_ids.end());
  // No post-processor: the slow tokenizer's add_bos_token / add_eos_token decide.
  if (!post_seen && tconfig) {
    if (get_bool(*tconfig, "add_bos_token", false) && c->bos_id >= 0) c->prefix.push_back(c->bos_id);
    if (get_bool(*tconfig, "add_eos_token", false) && eos >= 0) c->suffix.push_back(eos);
  }
  return Status::Ok();
}

// Duplicate keys and nesting deeper than graph::kMaxJsonDepth are refused: nlohmann
// would keep the last duplicate silently, and recurse once per level when freeing.
Status parse_json(const std::string& text, const std::string& label, json* out) {
  return graph::parse_json_strict(text.data(), text.data() + text.size(), label, out);
}

// An optional JSON file beside tokenizer.json; absent is fine, malformed is an error.
Status optional_json(const std::string& path, bool* present, json* out) {
  std::ifstream probe(path);
  *present = bool(probe);
  if (!*present) return Status::Ok();
  std::string text;
  HW_RETURN_IF_ERROR(read_file(path, &text));
  return parse_json(text, path, out);
}

}  // namespace

namespace tok {
bool is_end_of_turn_text(const std::string& s) {
  static const char* const kTexts[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                       "<|endoftext|>", "<|end_of_text|>", "<EOT>", "<|return|>", "<|call|>"};
  for (const char* t : kTexts)
    if (s == t) return true;
  return false;
}
}  // namespace tok

Status tokenizer_from_hf_json(const std::string& json_text, const std::string& label, std::unique_ptr<Tokenizer>* out) {
  json root;
  HW_RETURN_IF_ERROR(parse_json(json_text, label, &root));
  Config c;
  try {
    HW_RETURN_IF_ERROR(config_from_json(root, label, nullptr, nullptr, &c));
  } catch (const json::exception& e) {
    return format_error(label + ": " + e.what());
  }
  return Tokenizer::from_config(std::move(c), out);
}

Status tokenizer_from_hf(const std::string& path, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return invalid_argument("tokenizer_from_hf(" + path + "): null output pointer");
  std::string text;
  HW_RETURN_IF_ERROR(read_file(path, &text));
  json root;
  HW_RETURN_IF_ERROR(parse_json(text, path, &root));
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  json tconfig, gconfig;
  bool has_t = false, has_g = false;
  HW_RETURN_IF_ERROR(optional_json(dir + "tokenizer_config.json", &has_t, &tconfig));
  HW_RETURN_IF_ERROR(optional_json(dir + "generation_config.json", &has_g, &gconfig));
  Config c;
  try {
    HW_RETURN_IF_ERROR(config_from_json(root, path, has_t ? &tconfig : nullptr, has_g ? &gconfig : nullptr, &c));
  } catch (const json::exception& e) {
    return format_error(path + ": " + e.what());
  }
  return Tokenizer::from_config(std::move(c), out);
}

}  // namespace headwise
