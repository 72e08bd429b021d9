// Tokenizer (runtime/tokenizer.cpp): the merge rules on a hand-built vocabulary whose
// answers are worked out by hand, load/save errors, and on the real 512-token
// vocabularies (../shared/models, skipped when absent) ids equal to an independent
// Python implementation of llama2.c's bpe_encode and exact decode round trips.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "headwise/tokenizer.hpp"

namespace headwise::test {
namespace {

namespace fs = std::filesystem;

// A directory of its own per test (ctest may run tests in parallel), removed after.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    static int serial = 0;  // tells apart two directories of one test
    std::string name = "headwise_tok_" + std::to_string(::getpid()) + "_" +
                       std::to_string(serial++) + "_" + info->test_suite_name() + "_" +
                       info->name();
    for (char& c : name) c = c == '/' ? '_' : c;  // parameterised names hold '/'
    path_ = fs::temp_directory_path() / name;
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// tokenizer.bin bytes written field by field here, not through Tokenizer::save.
struct VocabBuilder {
  std::string bytes;
  int count = 0;
  explicit VocabBuilder(int32_t max_len) { put(max_len); }
  template <typename T>
  void put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  int add(const std::string& piece, float score) {
    put(score);
    put(int32_t(piece.size()));
    bytes += piece;
    return count++;
  }
};

// The llama layout (<unk>, BOS, EOS, 256 byte pieces) and a few pieces whose scores
// make the merge order observable.
struct Toy {
  int space, a, b, c, ab, bc, sp_a, e_acute, abc, x, xx, z, zz, cont4, size;
  std::string bytes;
  Toy() {
    VocabBuilder v(7);
    v.add("<unk>", 0);
    v.add("\n<s>\n", 0);
    v.add("\n</s>\n", 0);
    char hex[8];
    for (int i = 0; i < 256; ++i) {
      std::snprintf(hex, sizeof hex, "<0x%02X>", i);
      v.add(hex, 0);
    }
    space = v.add(" ", -100);
    a = v.add("a", -100);
    b = v.add("b", -100);
    c = v.add("c", -100);
    ab = v.add("ab", -5);
    bc = v.add("bc", -1);
    sp_a = v.add(" a", -3);
    e_acute = v.add("\xc3\xa9", -100);
    abc = v.add("abc", -2);
    x = v.add("x", -100);
    xx = v.add("xx", -4);
    z = v.add("z", -100);
    zz = v.add("zz", -2e10f);  // below llama2.c's -1e10 floor: never merged
    cont4 = v.add("\x80\x80\x80\x80", -100);
    size = v.count;
    bytes = v.bytes;
  }
};

std::unique_ptr<Tokenizer> load_toy(const TempDir& dir, const Toy& toy) {
  const std::string path = dir.file("toy.bin");
  write_bytes(path, toy.bytes);
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(path, toy.size, &tok);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

using Ids = std::vector<int32_t>;
constexpr int32_t kByte = 3;  // id of byte-fallback piece <0x00>

TEST(TokenizerToy, MergesHighestScoreFirst) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), t.size);
  // [' ', a, b, c]: pairs ' a' -3, ab -5, bc -1 → bc; then ' a' -3, abc -2 → abc;
  // ' abc' is no piece. Merging by position or by first-found would end elsewhere.
  EXPECT_EQ(tok->encode("abc", true), (Ids{1, t.space, t.abc}));
  EXPECT_EQ(tok->encode("abc", false), (Ids{t.space, t.abc}));
  // [' ', a, b]: ' a' -3 beats ab -5.
  EXPECT_EQ(tok->encode("ab", true), (Ids{1, t.sp_a, t.b}));
}

TEST(TokenizerToy, EqualScoresMergeLeftmost) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("xxx", true), (Ids{1, t.space, t.xx, t.x}));
  EXPECT_EQ(tok->encode("xxxx", true), (Ids{1, t.space, t.xx, t.xx}));
}

TEST(TokenizerToy, ScoresAtOrBelowMinus1e10NeverMerge) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("zz", true), (Ids{1, t.space, t.z, t.z}));
}

TEST(TokenizerToy, EmptyTextHasNoDummyPrefix) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("", true), (Ids{1}));
  EXPECT_EQ(tok->encode("", false), (Ids{}));
}

TEST(TokenizerToy, CodePointsAndByteFallback) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  // é has a piece; ü (C3 BC) and 😀 (F0 9F 98 80) fall back to one id per byte.
  EXPECT_EQ(tok->encode("\xc3\xa9", true), (Ids{1, t.space, t.e_acute}));
  EXPECT_EQ(tok->encode("\xc3\xbc", true), (Ids{1, t.space, kByte + 0xC3, kByte + 0xBC}));
  EXPECT_EQ(tok->encode("\xf0\x9f\x98\x80", true),
            (Ids{1, t.space, kByte + 0xF0, kByte + 0x9F, kByte + 0x98, kByte + 0x80}));
  // 'd' has no piece; NUL is a byte like any other.
  EXPECT_EQ(tok->encode(std::string("d\0", 2), true), (Ids{1, t.space, kByte + 'd', kByte + 0}));
  // é plus a stray continuation byte is one 3-byte group with no piece: all bytes fall
  // back, é is not split off.
  EXPECT_EQ(tok->encode("\xc3\xa9\x80", true),
            (Ids{1, t.space, kByte + 0xC3, kByte + 0xA9, kByte + 0x80}));
  // Stray continuation bytes group by at most 4: 80×5 = [80 80 80 80][80].
  EXPECT_EQ(tok->encode("\x80\x80\x80\x80\x80", true), (Ids{1, t.space, t.cont4, kByte + 0x80}));
}

TEST(TokenizerToy, Decode) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->decode(1, t.sp_a), "a");      // after BOS the leading space goes
  EXPECT_EQ(tok->decode(t.a, t.sp_a), " a");   // elsewhere it stays
  EXPECT_EQ(tok->decode(1, t.space), "");
  EXPECT_EQ(tok->decode(t.a, t.abc), "abc");
  EXPECT_EQ(tok->decode(t.a, kByte + 'A'), "A");  // <0x41> is the byte itself
  EXPECT_EQ(tok->decode(1, kByte + ' '), " ");    // a byte piece has no leading space
  EXPECT_EQ(tok->decode(t.a, kByte + '\n'), "\n");
  EXPECT_EQ(tok->decode(t.a, kByte + '\t'), "\t");
  EXPECT_EQ(tok->decode(t.a, kByte + 0x01), "");   // control bytes print nothing
  EXPECT_EQ(tok->decode(t.a, kByte + 0x00), "");
  EXPECT_EQ(tok->decode(t.a, kByte + 0x7F), "");
  EXPECT_EQ(tok->decode(t.a, kByte + 0xC3), "");  // llama2.c (C locale) prints no lone byte >= 0x80
  EXPECT_EQ(tok->piece_bytes(t.a, kByte + 0xC3), "\xc3");  // ... but the bytes are there
  EXPECT_EQ(tok->piece_bytes(t.a, kByte + 0x01), "\x01");
  EXPECT_EQ(tok->decode(t.a, 2), "\n</s>\n");
  EXPECT_EQ(tok->decode(t.a, -1), "");
  EXPECT_EQ(tok->decode(t.a, t.size), "");
}

TEST(TokenizerToy, SaveWritesTheSameBytes) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  const std::string out = dir.file("saved.bin");
  const Status s = tok->save(out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(read_bytes(out), t.bytes);
}

TEST(TokenizerToy, SaveToUnwritablePathNamesIt) {
  TempDir dir;
  Toy t;
  auto tok = load_toy(dir, t);
  ASSERT_TRUE(tok);
  const std::string out = dir.file("no_such_dir/tok.bin");
  const Status s = tok->save(out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(out), std::string::npos) << s.message();
}

TEST(TokenizerLoad, MissingFile) {
  TempDir dir;
  const std::string path = dir.file("absent.bin");
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(path, 512, &tok);
  EXPECT_EQ(s.code(), StatusCode::not_found);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_FALSE(tok);
}

TEST(TokenizerLoad, TruncatedInsidePieceNamesFileAndToken) {
  TempDir dir;
  Toy t;
  // Cut after the header, all of token 0 "<unk>" and the score, length and 2 of the
  // 5 bytes of token 1.
  const size_t cut = 4 + (8 + 5) + 8 + 2;
  const std::string path = dir.file("cut.bin");
  write_bytes(path, t.bytes.substr(0, cut));
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(path, t.size, &tok);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("token 1 "), std::string::npos) << s.message();
  EXPECT_FALSE(tok);
}

TEST(TokenizerLoad, MoreTokensThanTheFileHolds) {
  TempDir dir;
  Toy t;
  const std::string path = dir.file("toy.bin");
  write_bytes(path, t.bytes);
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(path, t.size + 1, &tok);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("token " + std::to_string(t.size) + " "), std::string::npos)
      << s.message();
}

TEST(TokenizerLoad, NegativeOrHugeLength) {
  TempDir dir;
  for (int32_t len : {-1, (1 << 20) + 1}) {
    VocabBuilder v(7);
    v.add("<unk>", 0);
    v.put(0.0f);
    v.put(len);
    v.bytes += "abc";
    const std::string path = dir.file("bad.bin");
    write_bytes(path, v.bytes);
    std::unique_ptr<Tokenizer> tok;
    const Status s = Tokenizer::load(path, 2, &tok);
    EXPECT_EQ(s.code(), StatusCode::format_error) << len;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("token 1 "), std::string::npos) << s.message();
  }
}

TEST(TokenizerLoad, BadArguments) {
  TempDir dir;
  Toy t;
  const std::string path = dir.file("toy.bin");
  write_bytes(path, t.bytes);
  std::unique_ptr<Tokenizer> tok;
  EXPECT_EQ(Tokenizer::load(path, 0, &tok).code(), StatusCode::invalid_argument);
  EXPECT_EQ(Tokenizer::load(path, t.size, nullptr).code(), StatusCode::invalid_argument);
}

// --- the real vocabularies ------------------------------------------------------------

const char* const kModels[] = {"stories260K", "aidreams260K"};

std::string tok_path(const std::string& model) {
  return std::string(HEADWISE_SHARED_DIR) + "/models/" + model + "/tok512.bin";
}

#define HW_REQUIRE_FILE(path)                                   \
  do {                                                          \
    if (!fs::exists(path)) GTEST_SKIP() << (path) << " is absent"; \
  } while (0)

std::unique_ptr<Tokenizer> load_real(const std::string& path) {
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(path, 512, &tok);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

// Concatenated decode of ids[1:] (ids[0] is BOS), with each id's predecessor as prev.
std::string decode_all(const Tokenizer& tok, const Ids& ids) {
  std::string out;
  for (size_t i = 1; i < ids.size(); ++i) out += tok.piece_bytes(ids[i - 1], ids[i]);
  return out;
}

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
      "",
      "Once upon a time",
      "The animal did not cross the street because it was too tired",
      "Caf\xc3\xa9 na\xc3\xafve \xe2\x80\x9cquoted\xe2\x80\x9d \xf0\x9f\x98\x80\xf0\x9f\x8e\x89 "
      "\xc3\xbc\xc3\xb1 \xe2\x82\xac" "5 \xce\xbb\xce\xbc \xe4\xb8\xad\xe6\x96\x87",
      "  two  spaces,\n\nblank line\n   three\tand\ttabs  \n",
      " leading space and trailing ",
      "Once upon a time, there was a little girl named Lily.",
      "Lily's mom said, \"Lily, let's go to the park.\"",
      "x",
      "\n",
      "invalid utf-8: \x80\x80\xc3 \xff\xfe done",
  };
  return p;
}

std::vector<Ids> python_encode(const std::string& path, const std::vector<std::string>& texts) {
  TempDir dir;
  const std::string list = dir.file("prompts.hex");
  {
    std::ofstream f(list);
    char h[3];
    for (const std::string& t : texts) {
      for (unsigned char c : t) {
        std::snprintf(h, sizeof h, "%02x", c);
        f << h;
      }
      f << "\n";
    }
  }
  const std::string cmd = std::string(HEADWISE_PYTHON) + " '" + HEADWISE_SOURCE_DIR +
                          "/tests/runtime/tokenizer_reference.py' '" + path + "' 512 '" + list + "'";
  std::vector<Ids> out;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << cmd;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream nums(line);
    Ids ids;
    int32_t id;
    while (nums >> id) ids.push_back(id);
    out.push_back(ids);
  }
  return out;
}

class RealTokenizer : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTokenizer, MatchesPythonReference) {
  const std::string path = tok_path(GetParam());
  HW_REQUIRE_FILE(path);
  auto tok = load_real(path);
  ASSERT_TRUE(tok);
  const std::vector<Ids> want = python_encode(path, prompts());
  ASSERT_EQ(want.size(), prompts().size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(tok->encode(prompts()[i], true), want[i]) << "prompt " << i << ": " << prompts()[i];
  // The oracle is not trivially agreeing: merges happened, and bytes fell back.
  EXPECT_EQ(want[0], (Ids{1}));
  EXPECT_LT(want[2].size(), prompts()[2].size() * 2 / 3);
  bool fallback = false;
  for (int32_t id : want[3]) fallback = fallback || (id >= 3 && id < 259);
  EXPECT_TRUE(fallback);
}

TEST_P(RealTokenizer, DecodeRoundTrips) {
  const std::string path = tok_path(GetParam());
  HW_REQUIRE_FILE(path);
  auto tok = load_real(path);
  ASSERT_TRUE(tok);
  for (const std::string& text : prompts()) {
    const Ids ids = tok->encode(text, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], Tokenizer::kBos);
    EXPECT_EQ(decode_all(*tok, ids), text);
  }
}

TEST_P(RealTokenizer, SaveReproducesTheFile) {
  const std::string path = tok_path(GetParam());
  HW_REQUIRE_FILE(path);
  auto tok = load_real(path);
  ASSERT_TRUE(tok);
  TempDir dir;
  const std::string out = dir.file("tok.bin");
  const Status s = tok->save(out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(read_bytes(out), read_bytes(path));
}

TEST_P(RealTokenizer, TruncatedCopy) {
  const std::string path = tok_path(GetParam());
  HW_REQUIRE_FILE(path);
  const std::string all = read_bytes(path);
  TempDir dir;
  const std::string cut = dir.file("cut.bin");
  // One byte short: inside the last piece (3 bytes in stories260K's, 2 in aidreams260K's).
  write_bytes(cut, all.substr(0, all.size() - 1));
  std::unique_ptr<Tokenizer> tok;
  const Status s = Tokenizer::load(cut, 512, &tok);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find(cut), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("token 511 "), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Models, RealTokenizer, ::testing::ValuesIn(kModels));

// The known-good greedy story (README: expected-greedy-200.txt) survives encode + decode
// exactly, starting with its first sentence.
TEST(StoriesTokenizer, KnownGoodStoryRoundTrips) {
  const std::string path = tok_path("stories260K");
  const std::string story_path =
      std::string(HEADWISE_SHARED_DIR) + "/models/stories260K/expected-greedy-200.txt";
  HW_REQUIRE_FILE(path);
  HW_REQUIRE_FILE(story_path);
  auto tok = load_real(path);
  ASSERT_TRUE(tok);
  const std::string first = "Once upon a time, there was a little girl named Lily.";
  const Ids ids = tok->encode(first, true);
  EXPECT_EQ(decode_all(*tok, ids), first);
  // "Once" is one piece with the dummy-prefix space; after BOS it prints without it.
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(tok->piece(ids[1]), " Once");
  EXPECT_EQ(tok->decode(ids[0], ids[1]), "Once");

  std::string story = read_bytes(story_path);
  ASSERT_EQ(story.compare(0, first.size(), first), 0);
  EXPECT_EQ(decode_all(*tok, tok->encode(story, true)), story);
}

}  // namespace
}  // namespace headwise::test
