// headwise's tokenizers against llama.cpp and Hugging Face tokenizers on the corpus of
// tests/runtime/tokenizer_corpus.py: the ids must be equal, string by string, for each
// vocabulary GGUF (llama.cpp's tokenize with and without special-token parsing) and each
// tokenizer.json (HF encode with and without add_special_tokens; HF always parses added
// tokens, so headwise's parse_special=false is compared only on strings that spell none),
// and headwise's decode must equal HF's decode(ids, skip_special_tokens=true).
// The references come from tests/node/tokenizer_reference.js (run by CTest first).
//
// usage: tokenizer_reference_check CORPUS.json REFERENCE.json
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/gguf.hpp"
#include "headwise/tokenizer.hpp"
#include "runtime/tokenizer_load.hpp"

using headwise::EncodeOptions;
using headwise::Status;
using headwise::Tokenizer;
using nlohmann::json;

namespace {

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(char(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string ids_str(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s + "]";
}

struct Tally {
  std::string name;
  int compared = 0, mismatched = 0;
  void check(const std::string& what, const std::string& text, const std::vector<int32_t>& got,
             const std::vector<int32_t>& want) {
    ++compared;
    if (got == want) return;
    if (++mismatched <= 8)
      std::fprintf(stderr, "MISMATCH %s %s text(hex)=%s\n  headwise %s\n  reference %s\n", name.c_str(), what.c_str(),
                   hex(text).c_str(), ids_str(got).c_str(), ids_str(want).c_str());
  }
  void check_text(const std::string& what, const std::string& text, const std::string& got, const std::string& want) {
    ++compared;
    if (got == want) return;
    if (++mismatched <= 8)
      std::fprintf(stderr, "MISMATCH %s %s text(hex)=%s\n  headwise %s\n  reference %s\n", name.c_str(), what.c_str(),
                   hex(text).c_str(), hex(got).c_str(), hex(want).c_str());
  }
};

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tokenizer_reference_check CORPUS.json REFERENCE.json\n");
    return 2;
  }
  std::ifstream cf(argv[1]), rf(argv[2]);
  if (!cf || !rf) {
    std::fprintf(stderr, "cannot open %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  const json corpus_json = json::parse(cf, nullptr, false), ref = json::parse(rf, nullptr, false);
  if (corpus_json.is_discarded() || ref.is_discarded() || !ref.contains("llama_cpp") || !ref.contains("hf")) {
    std::fprintf(stderr, "malformed corpus or reference JSON\n");
    return 1;
  }
  std::vector<std::string> corpus;
  for (const json& e : corpus_json) corpus.push_back(unhex(e["hex"].get<std::string>()));
  std::vector<Tally> tallies;
  int failures = 0;

  for (const json& r : ref["llama_cpp"]) {
    const std::string file = r["file"].get<std::string>();
    std::unique_ptr<headwise::formats::GgufFile> g;
    std::unique_ptr<Tokenizer> tok;
    Status s = headwise::formats::GgufFile::open(file, &g);
    if (s.ok()) s = headwise::tokenizer_from_gguf(*g, &tok);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      ++failures;
      continue;
    }
    Tally t{"llama.cpp " + file};
    const auto& entries = r["entries"];
    for (size_t i = 0; i < corpus.size() && i < entries.size(); ++i) {
      if (entries[i].is_null()) continue;
      t.check("plain", corpus[i], tok->encode(corpus[i], EncodeOptions{false, false}), ids_of(entries[i]["plain"]));
      t.check("parse_special", corpus[i], tok->encode(corpus[i], EncodeOptions{false, true}),
              ids_of(entries[i]["special"]));
    }
    // llama.cpp's own tokenize adds nothing here; what add_special adds is BOS when the
    // file says so.
    const std::vector<int32_t> with = tok->encode("Hello", EncodeOptions{true, false});
    const std::vector<int32_t> without = tok->encode("Hello", EncodeOptions{false, false});
    std::vector<int32_t> expect = without;
    if (tok->add_bos()) expect.insert(expect.begin(), tok->bos_id());
    t.check("add_special", "Hello", with, expect);
    tallies.push_back(t);
  }

  for (const json& r : ref["hf"]) {
    const std::string file = r["file"].get<std::string>();
    std::unique_ptr<Tokenizer> tok;
    const Status s = headwise::tokenizer_from_hf(file, &tok);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      ++failures;
      continue;
    }
    Tally t{"HF " + file};
    // What tokenizer_config.json says: the chat template and the end-of-turn tokens.
    if (file.find("tokenizer-qwen3/models/") != std::string::npos) {
      t.check("eos_ids", "", tok->eos_ids(), {151643, 151645});  // <|endoftext|>, <|im_end|>
      t.check_text("chat_template", "", tok->chat_template().substr(0, 20), "{%- if tools %}\n    ");
    }
    if (file.find("tokenizer-llama3/models/") != std::string::npos) {
      t.check("eos_ids", "", tok->eos_ids(), {128001, 128009});  // <|end_of_text|>, <|eot_id|>
      t.check("bos_id", "", {tok->bos_id()}, {128000});
      t.check_text("chat_template has a template", "", tok->chat_template().empty() ? "" : "yes", "yes");
    }
    if (file.find("tokenizer-llama2/models/") != std::string::npos) {
      t.check("bos/eos", "", {tok->bos_id()}, {1});
      t.check("eos", "", tok->eos_ids(), {2});
      t.check("add_bos", "", {int(tok->add_bos())}, {1});
    }
    const auto specials = tok->special_tokens();
    const bool raw_bytes = std::string(tok->kind_name()) != "byte-bpe";
    const auto& entries = r["entries"];
    for (size_t i = 0; i < corpus.size() && i < entries.size(); ++i) {
      const json& e = entries[i];
      const std::string& text = corpus[i];
      // A character-level tokenizer with byte fallback keeps invalid bytes as bytes,
      // which no JavaScript string can carry to the reference.
      if (!e["valid"].get<bool>() && raw_bytes) continue;
      const std::vector<int32_t> want_with = ids_of(e["with_special"]), want_without = ids_of(e["without_special"]);
      t.check("add_special+parse_special", text, tok->encode(text, EncodeOptions{true, true}), want_with);
      const std::vector<int32_t> without = tok->encode(text, EncodeOptions{false, true});
      t.check("parse_special", text, without, want_without);
      bool spells_special = false;
      for (const auto& sp : specials) spells_special = spells_special || text.find(sp.second) != std::string::npos;
      if (!spells_special) t.check("add_special", text, tok->encode(text, EncodeOptions{true, false}), want_with);
      if (e["valid"].get<bool>()) t.check_text("decode", text, tok->decode(want_without, true), e["decoded"].get<std::string>());
    }
    tallies.push_back(t);
  }

  for (const Tally& t : tallies) {
    std::printf("%-100s %5d compared, %d mismatched\n", t.name.c_str(), t.compared, t.mismatched);
    if (t.mismatched > 0) ++failures;
  }
  if (tallies.empty()) {
    std::fprintf(stderr, "no reference tokenizers\n");
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
