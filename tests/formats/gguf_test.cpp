// GGUF reader and writer: round trips of every value type (nested arrays included),
// the vocabulary files llama.cpp wrote (../shared/vocab), and hostile files: each must
// fail with a message naming the file and the culprit, never crash or over-allocate.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "formats/gguf.hpp"
#include "formats/gguf_write.hpp"

namespace headwise::formats {
namespace {

std::string tmp_path(const std::string& name) {
  return std::string(HEADWISE_BINARY_DIR) + "/gguf_test_" + name;
}

Status parse_bytes(const std::vector<uint8_t>& b, std::unique_ptr<GgufFile>* out) {
  return GgufFile::parse(b.data(), b.size(), "mem.gguf", out);
}

TEST(Gguf, RoundTripEveryValueType) {
  GgufWriter w;
  w.set_u8("t.u8", 250);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 65000);
  w.set_i16("t.i16", -32000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_i64("t.i64", -9000000000000000000ll);
  w.set_f32("t.f32", 1.5f);
  w.set_f64("t.f64", -2.25);
  w.set_bool("t.bool", true);
  w.set_str("t.str", std::string("h\0llo", 5));
  w.set_str_array("t.strs", {"a", "", "ccc"});
  w.set_f32_array("t.f32s", {1.f, -2.f, 3.5f});
  w.set_i32_array("t.i32s", {7, -8});
  // array of arrays of i32: [[1, 2], [3]]
  std::vector<uint8_t> nested;
  auto put32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) nested.push_back(uint8_t(v >> (8 * i))); };
  auto put64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) nested.push_back(uint8_t(v >> (8 * i))); };
  put32(uint32_t(GgufType::array)); put64(2);
  put32(uint32_t(GgufType::i32)); put64(2); put32(1); put32(2);
  put32(uint32_t(GgufType::i32)); put64(1); put32(3);
  w.set_encoded("t.nested", GgufType::array, nested);
  std::vector<float> t1 = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(w.add_f32("m", {2, 3}, t1.data()).ok());
  std::vector<uint16_t> t2 = {0x3c00, 0x4000};  // f16 1, 2
  ASSERT_TRUE(w.add_tensor("h", kGgmlF16, {2}, t2.data(), 4).ok());

  const std::string path = tmp_path("roundtrip.gguf");
  ASSERT_TRUE(w.write(path).ok());
  std::unique_ptr<GgufFile> f;
  Status s = GgufFile::open(path, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 16u);
  EXPECT_EQ(f->metadata()[0].first, "t.u8");
  EXPECT_EQ(f->find("t.u8")->i, 250);
  EXPECT_EQ(f->find("t.i8")->i, -100);
  EXPECT_EQ(f->find("t.u16")->i, 65000);
  EXPECT_EQ(f->find("t.i16")->i, -32000);
  uint32_t u32 = 0;
  ASSERT_TRUE(f->get_u32("t.u32", &u32).ok());
  EXPECT_EQ(u32, 4000000000u);
  EXPECT_EQ(f->find("t.i32")->i, -2000000000);
  uint64_t u64 = 0;
  ASSERT_TRUE(f->get_u64("t.u64", &u64).ok());
  EXPECT_EQ(u64, 18000000000000000000ull);
  int64_t i64 = 0;
  ASSERT_TRUE(f->get_i64("t.i64", &i64).ok());
  EXPECT_EQ(i64, -9000000000000000000ll);
  float f32 = 0;
  ASSERT_TRUE(f->get_f32("t.f32", &f32).ok());
  EXPECT_EQ(f32, 1.5f);
  EXPECT_EQ(f->find("t.f64")->f, -2.25);
  bool b = false;
  ASSERT_TRUE(f->get_bool("t.bool", &b).ok());
  EXPECT_TRUE(b);
  std::string str;
  ASSERT_TRUE(f->get_str("t.str", &str).ok());
  EXPECT_EQ(str, std::string("h\0llo", 5));
  const GgufValue* arr = nullptr;
  const GgufType st = GgufType::string;
  ASSERT_TRUE(f->get_arr("t.strs", &st, &arr).ok());
  ASSERT_EQ(arr->strings.size(), 3u);
  EXPECT_EQ(arr->strings[2], "ccc");
  EXPECT_EQ(arr->strings[1], "");
  ASSERT_TRUE(f->get_arr("t.f32s", nullptr, &arr).ok());
  EXPECT_EQ(arr->float_at(2), 3.5);
  EXPECT_EQ(arr->type_str(), "array[f32]");
  ASSERT_TRUE(f->get_arr("t.i32s", nullptr, &arr).ok());
  EXPECT_EQ(arr->int_at(1), -8);
  ASSERT_TRUE(f->get_arr("t.nested", nullptr, &arr).ok());
  ASSERT_EQ(arr->items.size(), 2u);
  EXPECT_EQ(arr->type_str(), "array[array[i32]]");
  EXPECT_EQ(arr->items[0].int_at(1), 2);
  EXPECT_EQ(arr->items[1].int_at(0), 3);

  ASSERT_EQ(f->tensors().size(), 2u);
  const GgufTensor* m = f->find_tensor("m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m->ne, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(m->nbytes, 24u);
  EXPECT_EQ(std::memcmp(m->data, t1.data(), 24), 0);
  EXPECT_EQ((m->data - (const uint8_t*)nullptr) % 32, 0) << "tensor data aligned in the mapping";
  const GgufTensor* h = f->find_tensor("h");
  EXPECT_STREQ(h->type_name(), "F16");
  EXPECT_EQ(std::memcmp(h->data, t2.data(), 4), 0);

  // Re-encoding every value through set_value gives the same bytes.
  GgufWriter w2;
  for (const auto& [k, v] : f->metadata()) w2.set_value(k, v);
  GgufWriter w3;
  for (const auto& [k, v] : f->metadata()) w3.set_value(k, v);
  std::unique_ptr<GgufFile> f2;
  const std::vector<uint8_t> bytes2 = w2.bytes();
  ASSERT_TRUE(parse_bytes(bytes2, &f2).ok());
  EXPECT_EQ(f2->find("t.nested")->items[1].int_at(0), 3);
  EXPECT_EQ(bytes2, w3.bytes());
}

TEST(Gguf, TypedGettersExplainMismatches) {
  GgufWriter w;
  w.set_str("s", "x");
  w.set_i32("neg", -1);
  w.set_u64("big", 1ull << 40);
  const auto bytes = w.bytes();
  std::unique_ptr<GgufFile> f;
  ASSERT_TRUE(parse_bytes(bytes, &f).ok());
  uint32_t u = 0;
  Status s = f->get_u32("s", &u);
  EXPECT_NE(s.message().find("mem.gguf: key 's' has type string, expected an integer"), std::string::npos) << s.message();
  s = f->get_u32("neg", &u);
  EXPECT_NE(s.message().find("'neg' is negative"), std::string::npos) << s.message();
  s = f->get_u32("big", &u);
  EXPECT_NE(s.message().find("too large for 32 bits"), std::string::npos) << s.message();
  s = f->get_u32("absent", &u);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  EXPECT_NE(s.message().find("'absent' is missing"), std::string::npos);
  u = 9;
  EXPECT_TRUE(f->opt_u32("absent", &u).ok());
  EXPECT_EQ(u, 9u);
}

TEST(Gguf, ReadsLlamaCppVocabularies) {
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"}) {
    const std::string path = std::string(HEADWISE_SHARED_DIR) + "/vocab/" + name;
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::open(path, &f);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(f->version() == 2 || f->version() == 3);
    std::string model;
    ASSERT_TRUE(f->get_str("tokenizer.ggml.model", &model).ok());
    const GgufValue* tokens = nullptr;
    const GgufType st = GgufType::string;
    ASSERT_TRUE(f->get_arr("tokenizer.ggml.tokens", &st, &tokens).ok());
    if (model == "llama") {
      EXPECT_EQ(tokens->count, 32000u);
      EXPECT_EQ(tokens->strings[1], "<s>");
      const GgufValue* scores = nullptr;
      const GgufType ft = GgufType::f32;
      ASSERT_TRUE(f->get_arr("tokenizer.ggml.scores", &ft, &scores).ok());
      EXPECT_EQ(scores->count, 32000u);
    } else {
      EXPECT_EQ(model, "gpt2");
      EXPECT_EQ(tokens->count, 50257u);
      EXPECT_EQ(tokens->strings[0], "!");
      const GgufValue* merges = nullptr;
      ASSERT_TRUE(f->get_arr("tokenizer.ggml.merges", &st, &merges).ok());
      EXPECT_EQ(merges->count, 50000u);
    }
    uint32_t bos = 0;
    EXPECT_TRUE(f->get_u32("tokenizer.ggml.bos_token_id", &bos).ok());
    // Everything read re-encodes to a file that parses the same.
    GgufWriter w;
    for (const auto& [k, v] : f->metadata()) w.set_value(k, v);
    std::unique_ptr<GgufFile> f2;
    const auto bytes = w.bytes();
    ASSERT_TRUE(parse_bytes(bytes, &f2).ok());
    EXPECT_EQ(f2->metadata().size(), f->metadata().size());
    EXPECT_EQ(f2->find("tokenizer.ggml.tokens")->strings, tokens->strings);
  }
}

// ---- hostile files ------------------------------------------------------------------

std::vector<uint8_t> small_file() {
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str_array("tokenizer.ggml.tokens", {"a", "b"});
  static const float data[4] = {1, 2, 3, 4};
  EXPECT_TRUE(w.add_f32("w", {2, 2}, data).ok());
  return w.bytes();
}

void expect_error(const std::vector<uint8_t>& b, const std::string& want) {
  std::unique_ptr<GgufFile> f;
  Status s = parse_bytes(b, &f);
  EXPECT_FALSE(s.ok()) << "expected an error containing: " << want;
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(s.message().rfind("mem.gguf: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
}

template <typename T>
void poke(std::vector<uint8_t>* b, size_t at, T v) { std::memcpy(b->data() + at, &v, sizeof v); }

TEST(Gguf, RefusesHostileFiles) {
  const std::vector<uint8_t> good = small_file();
  std::unique_ptr<GgufFile> f;
  ASSERT_TRUE(parse_bytes(good, &f).ok());

  // Every truncation before the end of the last tensor fails cleanly (the writer's
  // trailing padding is optional).
  const size_t end = f->data_offset() + f->tensors().back().offset + f->tensors().back().nbytes;
  for (size_t n = 0; n < end; ++n) {
    std::vector<uint8_t> t(good.begin(), good.begin() + n);
    Status s = parse_bytes(t, &f);
    ASSERT_FALSE(s.ok()) << "truncated to " << n;
    ASSERT_EQ(s.message().rfind("mem.gguf: ", 0), 0u) << s.message();
  }
  auto b = good;
  b[0] = 'X';
  expect_error(b, "not a GGUF file");
  b = good;
  poke<uint32_t>(&b, 4, 1);
  expect_error(b, "version 1");
  poke<uint32_t>(&b, 4, 0x03000000);
  expect_error(b, "big-endian");
  b = good;
  poke<uint64_t>(&b, 8, 1ull << 60);
  expect_error(b, "tensors; the file's");
  b = good;
  poke<uint64_t>(&b, 16, ~0ull);
  expect_error(b, "metadata entries");
  // the first key's length
  b = good;
  poke<uint64_t>(&b, 24, 1ull << 62);
  expect_error(b, "truncated");
  // the first value's type tag: 24 + 8 + len("general.architecture")
  b = good;
  poke<uint32_t>(&b, 24 + 8 + 20, 99);
  expect_error(b, "key 'general.architecture': unknown value type 99");
  // the array's count (2nd key): after key1 (8+20+4+8+5), key2 name (8+21), type 4, elem 4
  const size_t count_at = 24 + 45 + 29 + 4 + 4;
  b = good;
  poke<uint64_t>(&b, count_at, 1ull << 61);
  expect_error(b, "key 'tokenizer.ggml.tokens': array of 2305843009213693952 string elements does not fit");
}

TEST(Gguf, RefusesBadTensorsAndKeys) {
  static const float data[4] = {1, 2, 3, 4};
  {
    GgufWriter w;
    w.set_u32("k", 1);
    w.set_u32("k2", 1);
    auto b = w.bytes();
    // rename k2 → k (same length after patching "k2" into "k\0"? no: make both "k1"/"k1")
    GgufWriter w2;
    w2.set_u32("ka", 1);
    w2.set_u32("kb", 1);
    b = w2.bytes();
    for (size_t i = 0; i + 1 < b.size(); ++i)
      if (b[i] == 'k' && b[i + 1] == 'b') b[i + 1] = 'a';
    expect_error(b, "key 'ka' appears twice");
  }
  {
    GgufWriter w;
    ASSERT_TRUE(w.add_f32("t1", {4}, data).ok());
    ASSERT_TRUE(w.add_f32("t2", {4}, data).ok());
    auto b = w.bytes();
    for (size_t i = 0; i + 1 < b.size(); ++i)
      if (b[i] == 't' && b[i + 1] == '2') b[i + 1] = '1';
    expect_error(b, "tensor 't1': the name appears twice");
  }
  {
    GgufWriter w(64);
    ASSERT_TRUE(w.add_f32("t", {4}, data).ok());
    auto b = w.bytes();
    std::unique_ptr<GgufFile> f;
    ASSERT_TRUE(parse_bytes(b, &f).ok());
    EXPECT_EQ(f->alignment(), 64u);
    EXPECT_EQ(f->data_offset() % 64, 0u);
    // alignment 48: not a power of two
    const std::string key = "general.alignment";
    for (size_t i = 0; i + key.size() < b.size(); ++i)
      if (std::memcmp(b.data() + i, key.data(), key.size()) == 0) {
        poke<uint32_t>(&b, i + key.size() + 4, 48);
        break;
      }
    expect_error(b, "'general.alignment' is 48, not a power of two");
  }
  {
    GgufWriter w;
    ASSERT_TRUE(w.add_f32("t", {4}, data).ok());
    auto b = w.bytes();
    b.resize(b.size() - 20);
    expect_error(b, "tensor 't': 16 bytes at data offset 0 lie outside the file");
    b = w.bytes();
    // the offset field is the header's last 8 bytes before the padding: find it by value 0
    // after the type (F32 = 0): name(8+1) dims(4) ne(8) type(4) offset(8) from 24
    poke<uint64_t>(&b, 24 + 9 + 4 + 8 + 4, ~0ull - 31);
    expect_error(b, "lie outside the file");
    b = w.bytes();
    poke<uint64_t>(&b, 24 + 9 + 4 + 8 + 4, 4);
    expect_error(b, "offset 4 is not a multiple of the alignment 32");
    b = w.bytes();
    poke<uint32_t>(&b, 24 + 9 + 4 + 8, 77);
    expect_error(b, "tensor 't': unknown ggml type 77");
    b = w.bytes();
    poke<uint32_t>(&b, 24 + 9 + 4 + 8, 2);  // Q4_0: 4 is not a multiple of 32
    expect_error(b, "not a multiple of Q4_0's block of 32");
    b = w.bytes();
    poke<uint32_t>(&b, 24 + 9, 7);
    expect_error(b, "7 dimensions");
    b = w.bytes();
    poke<uint64_t>(&b, 24 + 9 + 4, 1ull << 40);
    expect_error(b, "lie outside the file");
    poke<uint64_t>(&b, 24 + 9 + 4, 1ull << 62);
    expect_error(b, "byte size overflows");
  }
  {
    // arrays nested deeper than the limit
    std::vector<uint8_t> v;
    auto put32 = [&](uint32_t x) { for (int i = 0; i < 4; ++i) v.push_back(uint8_t(x >> (8 * i))); };
    auto put64 = [&](uint64_t x) { for (int i = 0; i < 8; ++i) v.push_back(uint8_t(x >> (8 * i))); };
    for (int d = 0; d < 20; ++d) { put32(uint32_t(GgufType::array)); put64(1); }
    put32(uint32_t(GgufType::u8)); put64(0);
    GgufWriter w;
    w.set_encoded("deep", GgufType::array, std::vector<uint8_t>(v.begin() + 12, v.end()));
    expect_error(w.bytes(), "key 'deep'");
    expect_error(w.bytes(), "nested deeper than 8");
  }
  {
    GgufWriter w;
    w.set_encoded("b", GgufType::boolean, {7});
    expect_error(w.bytes(), "key 'b': bool value 7");
  }
}

TEST(Gguf, OpenNamesTheFile) {
  std::unique_ptr<GgufFile> f;
  Status s = GgufFile::open(tmp_path("does-not-exist.gguf"), &f);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  const std::string path = tmp_path("empty.gguf");
  std::ofstream(path).close();
  s = GgufFile::open(path, &f);
  EXPECT_NE(s.message().find(path + ": not a GGUF file"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace headwise::formats

namespace headwise::formats {
namespace {
// The fuzz seeds are valid files (so the fuzzer starts from inside the format).
TEST(Gguf, FuzzSeedsParse) {
  for (const char* name : {"all_types.gguf", "tensors_v2.gguf", "align64.gguf", "empty_v3.gguf"}) {
    std::unique_ptr<GgufFile> f;
    Status s = GgufFile::open(std::string(HEADWISE_SOURCE_DIR) + "/fuzz/corpus/gguf/" + name, &f);
    EXPECT_TRUE(s.ok()) << s.message();
  }
}
}  // namespace
}  // namespace headwise::formats
