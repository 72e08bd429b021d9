// The general tokenizer library (runtime/tokenizer_*.cpp) on inputs whose answers are
// worked out by hand: rank and score merge order (against the quadratic rescan that
// llama2.c does), added/special tokens, tokenizer.json errors naming the culprit, the
// streaming UTF-8 decoder, and the vocabulary GGUFs of ../shared/vocab (invalid UTF-8 as
// llama.cpp's SentencePiece tokenizer takes it: byte fallback of the raw bytes).
// Equality with llama.cpp and HF tokenizers on a 330-string corpus is the CTest test
// tokenizer_vs_llamacpp_and_hf (tests/runtime/tokenizer_reference_check.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "headwise/tokenizer.hpp"
#include "runtime/tokenizer_load.hpp"

namespace headwise::test {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<Tokenizer> from_json(const std::string& json, Status* status = nullptr) {
  std::unique_ptr<Tokenizer> t;
  const Status s = tokenizer_from_hf_json(json, "test.json", &t);
  if (status) *status = s;
  else EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

// A byte-level BPE over {a, b, c} with the given merges (in rank order).
std::string byte_bpe_json(const std::string& merges, const std::string& extra_vocab = "",
                          const std::string& added = "[]") {
  return R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 6)" +
         extra_vocab + R"(}, "merges": )" + merges + R"(}, "pre_tokenizer": {"type": "ByteLevel",
         "add_prefix_space": false, "use_regex": true}, "decoder": {"type": "ByteLevel"}, "added_tokens": )" +
         added + "}";
}

TEST(TokenizerBpe, LowestRankMergesFirst) {
  auto t = from_json(byte_bpe_json(R"(["a b", "ab c"])"));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("abc", EncodeOptions{false, false}), (Ids{6}));
  EXPECT_EQ(t->encode("abcab", EncodeOptions{false, false}), (Ids{6, 4}));
  auto u = from_json(byte_bpe_json(R"([["b", "c"], ["a", "b"]])"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->encode("abc", EncodeOptions{false, false}), (Ids{0, 5}));  // bc has the lower rank
  EXPECT_EQ(u->encode("abab", EncodeOptions{false, false}), (Ids{4, 4}));
  EXPECT_STREQ(u->kind_name(), "byte-bpe");
  EXPECT_EQ(u->decode(Ids{0, 5, 4}), "abcab");
}

TEST(TokenizerBpe, AddedTokensSpecialOnlyWhenParsed) {
  auto t = from_json(byte_bpe_json(R"(["a b"])", R"(, "<x>": 7, "<y>": 8)",
                                   R"([{"id": 7, "content": "<x>", "special": true},
                                       {"id": 8, "content": "<y>", "special": false}])"));
  ASSERT_TRUE(t);
  // "<x>" as plain text: '<', 'x', '>' are not in this vocabulary and are dropped, as HF
  // and llama.cpp drop bytes without a piece; "<y>" (not special) is always matched.
  EXPECT_EQ(t->encode("ab<x>ab", EncodeOptions{false, false}), (Ids{4, 4}));
  EXPECT_EQ(t->encode("ab<x>ab", EncodeOptions{false, true}), (Ids{4, 7, 4}));
  EXPECT_EQ(t->encode("ab<y>ab", EncodeOptions{false, false}), (Ids{4, 8, 4}));
  EXPECT_TRUE(t->is_special(7));
  EXPECT_FALSE(t->is_special(8));
  EXPECT_EQ(t->decode(Ids{4, 7, 8}, true), "ab<y>");
  EXPECT_EQ(t->decode(Ids{4, 7, 8}, false), "ab<x><y>");
}

TEST(TokenizerBpe, TemplateProcessingAddsBosAndEos) {
  auto t = from_json(R"({"model": {"type": "BPE", "vocab": {"<s>": 0, "</s>": 1, "a": 2}, "merges": []},
      "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}],
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                           "</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}}})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("aa", EncodeOptions{true, false}), (Ids{0, 2, 2, 1}));
  EXPECT_EQ(t->encode("aa", EncodeOptions{false, false}), (Ids{2, 2}));
  EXPECT_TRUE(t->add_bos());
  EXPECT_TRUE(t->add_eos());
  EXPECT_EQ(t->bos_id(), 0);
}

TEST(TokenizerBpe, ByteFallbackAndMetaspaceNormalizer) {
  // A Llama-2-style tokenizer.json: Prepend ▁, Replace ' ' by ▁, byte fallback.
  auto t = from_json(R"({"model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
      "vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "▁": 3, "h": 4, "▁h": 5, "i": 6, "▁hi": 7},
      "merges": ["▁ h", "▁h i"]},
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                     {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                  {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("hi hé", EncodeOptions{false, false}), (Ids{7, 5, 1, 2}));
  EXPECT_EQ(t->decode(Ids{7, 5, 1, 2}), "hi hé");
  EXPECT_EQ(t->encode("x", EncodeOptions{false, false}), (Ids{3, 0}));  // no byte piece for 'x': <unk>
  EXPECT_STREQ(t->kind_name(), "bpe");
}

TEST(TokenizerHfErrors, NameTheCulprit) {
  struct Case {
    std::string json, needle;
  };
  const std::vector<Case> cases = {
      {"{not json", "malformed JSON"},
      {R"({"model": {"type": "Unigram", "vocab": []}})", "model type 'Unigram'"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}})",
       "pre-tokenizer type 'Whitespace'"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "BertNormalizer"}})",
       "normalizer type 'BertNormalizer'"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "decoder": {"type": "WordPiece"}})",
       "decoder type 'WordPiece'"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a q"]}})", "merge 0"},
      {R"({"model": {"type": "BPE", "vocab": {"a": -4}, "merges": []}})", "out of range"},
      // ids far past the tokens named (the id table would be sized by the largest)
      {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 13065789}, "merges": []}})", "ids run up to 13065789"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
           "added_tokens": [{"id": 70000, "content": "<x>"}]})", "ids run up to 70000"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
           "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})",
       "does not compile"},
      {R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})", "empty"},
  };
  for (const Case& c : cases) {
    Status s;
    auto t = from_json(c.json, &s);
    EXPECT_FALSE(s.ok()) << c.json;
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("test.json"), std::string::npos) << s.message();
  }
}

// llama2.c's own merge loop: rescan every pair after each merge (quadratic), the
// reference the priority-queue version must equal.
Ids llama2c_quadratic(const Tokenizer& t, const std::string& text) {
  Ids toks;
  auto lookup = [&](const std::string& s) {
    for (int i = 0; i < t.vocab_size(); ++i)
      if (t.piece(i) == s) return i;
    return -1;
  };
  auto push = [&](const std::string& s) {
    const int id = lookup(s);
    if (id >= 0) toks.push_back(id);
    else
      for (unsigned char c : s) toks.push_back(int(c) + 3);
  };
  if (!text.empty()) push(" ");
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (len < 4 && i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) ++len;
    push(text.substr(i, len));
    i += len;
  }
  for (;;) {
    float best = -1e10f;
    int best_i = -1, best_id = -1;
    for (size_t i = 0; i + 1 < toks.size(); ++i) {
      const int id = lookup(t.piece(toks[i]) + t.piece(toks[i + 1]));
      if (id >= 0 && t.score(id) > best) best = t.score(id), best_i = int(i), best_id = id;
    }
    if (best_i < 0) break;
    toks[best_i] = best_id;
    toks.erase(toks.begin() + best_i + 1);
  }
  return toks;
}

TEST(TokenizerLlama2c, PriorityQueueEqualsQuadraticRescan) {
  // Pieces with repeated scores (ties), byte pieces, multi-byte characters.
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    pieces.push_back(buf);
  }
  for (const char* p : {" ", "a", "b", "c", "é", "ab", "ba", "aa", "bb", "abc", " a", " ab", "bab", "aab", "cc", "cé",
                        "aaa", "abab", " é"})
    pieces.push_back(p);
  std::vector<float> scores(pieces.size(), 0.0f);
  std::mt19937 rng(7);
  for (size_t i = 259; i < pieces.size(); ++i) scores[i] = float(int(rng() % 4));  // many ties
  auto t = Tokenizer::from_pieces(pieces, scores);
  const std::vector<std::string> alphabet = {"a", "b", "c", "é", " ", "x", "\xff", "\xc3"};
  for (int n = 0; n < 300; ++n) {
    std::string text;
    const int len = int(rng() % 24);
    for (int k = 0; k < len; ++k) text += alphabet[rng() % alphabet.size()];
    Ids want = llama2c_quadratic(*t, text);
    want.insert(want.begin(), Tokenizer::kBos);
    EXPECT_EQ(t->encode(text, true), want) << text;
  }
}

TEST(Utf8Stream, HoldsSplitCharactersAndReplacesInvalidBytes) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xF0\x9F"), "a");
  EXPECT_EQ(s.push("\x99"), "");
  EXPECT_EQ(s.push("\x82!"), "\xF0\x9F\x99\x82!");
  EXPECT_EQ(s.push("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(s.push("\xC3" "a"), "\xEF\xBF\xBD" "a");  // a lead byte cut short
  EXPECT_EQ(s.push("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(s.push("\xE4\xB8"), "");
  EXPECT_EQ(s.finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(s.push("ok"), "ok");
}

const std::string kVocab = std::string(HEADWISE_SHARED_DIR) + "/vocab/";

std::unique_ptr<Tokenizer> gguf_tokenizer(const std::string& name) {
  std::unique_ptr<formats::GgufFile> g;
  std::unique_ptr<Tokenizer> t;
  Status s = formats::GgufFile::open(kVocab + name, &g);
  if (s.ok()) s = tokenizer_from_gguf(*g, &t);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

TEST(TokenizerGguf, LlamaSpmInvalidUtf8FallsBackToRawBytes) {
  auto t = gguf_tokenizer("ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(t);
  EXPECT_STREQ(t->kind_name(), "spm");
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_ids(), (Ids{2}));
  EXPECT_TRUE(t->add_bos());
  // "▁" then the byte 0xFF as <0xFF> (id 3 + 0xFF); a lead byte with ASCII after it is one
  // symbol in llama.cpp (cut by the lead byte's length), so 'a' and 'b' become bytes too.
  EXPECT_EQ(t->encode("\xff", EncodeOptions{false, false}), (Ids{29871, 258}));
  EXPECT_EQ(t->encode("\xe4" "ab", EncodeOptions{false, false}), (Ids{29871, 0xE4 + 3, 'a' + 3, 'b' + 3}));
  EXPECT_EQ(t->encode("Hi", EncodeOptions{true, false}).front(), 1);
  EXPECT_EQ(t->encode("<s>", EncodeOptions{false, true}), (Ids{1}));
  // Streaming an emoji made of byte tokens: nothing until its last byte.
  const Ids ids = t->encode("a🙂", EncodeOptions{true, false});
  Utf8Stream stream;
  std::string shown, prev_shown;
  int32_t prev = -1;
  for (int32_t id : ids) {
    shown += stream.push(t->decode(prev, id));
    prev = id;
  }
  EXPECT_EQ(shown + stream.finish(), "a🙂");
  EXPECT_EQ(t->decode(ids), "a🙂");
}

TEST(TokenizerGguf, Gpt2ByteLevel) {
  auto t = gguf_tokenizer("ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(t);
  EXPECT_STREQ(t->kind_name(), "byte-bpe");
  EXPECT_FALSE(t->add_bos());
  EXPECT_EQ(t->encode("Hello world", EncodeOptions{true, false}), (Ids{15496, 995}));
  EXPECT_EQ(t->encode("<|endoftext|>", EncodeOptions{false, true}), (Ids{50256}));
  EXPECT_NE(t->encode("<|endoftext|>", EncodeOptions{false, false}), (Ids{50256}));
  const std::string text = "Zürich 🙂 naïve\n\tcode();";
  EXPECT_EQ(t->decode(t->encode(text, EncodeOptions{false, false})), text);
  EXPECT_EQ(t->eos_ids(), (Ids{50256}));
}

}  // namespace
}  // namespace headwise::test
