// `headwise tokenize` (tools/cmd_tokenize.cpp) on the vocabulary GGUFs of ../shared/vocab
// and on hand-written tokenizer.json files: the output formats, --file taking bytes
// exactly, what is added by default / with --no-special, special-token text plain
// unless --parse-special, and errors naming the culprit with exit codes 1 and 2.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/tools/run_cli.hpp"

namespace headwise::test {
namespace {

const std::string kSpm = HEADWISE_SHARED_DIR "/vocab/ggml-vocab-llama-spm.gguf";
const std::string kGpt2 = HEADWISE_SHARED_DIR "/vocab/ggml-vocab-gpt-2.gguf";

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "headwise_tokenize_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

TEST(TokenizeCli, LlamaAddsBosByDefault) {
  CliResult r = run_headwise("tokenize '" + kSpm + "' --text 'Hello world'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "1 15043 3186\n");
  r = run_headwise("tokenize '" + kSpm + "' --text 'Hello world' --no-special");
  EXPECT_EQ(r.out, "15043 3186\n");
}

TEST(TokenizeCli, SpecialTextIsPlainUnlessParsed) {
  CliResult r = run_headwise("tokenize '" + kGpt2 + "' --text '<|endoftext|>'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out, "50256\n");
  r = run_headwise("tokenize '" + kGpt2 + "' --text '<|endoftext|>' --parse-special");
  EXPECT_EQ(r.out, "50256\n");
}

TEST(TokenizeCli, JsonHasIdsAndPieces) {
  const CliResult r = run_headwise("tokenize '" + kGpt2 + "' --text 'Hello world' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\": [15496, 995], \"pieces\": [\"Hello\", \"\xC4\xA0world\"]}\n");
}

TEST(TokenizeCli, FileBytesExactlyIncludingInvalidUtf8) {
  // A trailing newline and an invalid byte are part of the text: "a\n\xff" ends with the
  // byte-level tokens of "\n" and of U+FFFD (how llama.cpp reads an invalid byte).
  const std::string f = temp_file("bytes.txt", "a\n\xff");
  const CliResult file = run_headwise("tokenize '" + kGpt2 + "' --file '" + f + "'");
  const CliResult text = run_headwise("tokenize '" + kGpt2 + "' --text \"$(printf 'a\\n\\357\\277\\275')\"");
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_EQ(file.out, text.out);
  EXPECT_EQ(file.out.substr(0, 6), "64 198");
}

TEST(TokenizeCli, TokenizerJsonAlone) {
  const std::string j = temp_file("tokenizer.json",
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]},
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}})");
  const CliResult r = run_headwise("tokenize '" + j + "' --text abab");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "2 2\n");
}

TEST(TokenizeCli, ErrorsNameTheCulprit) {
  const std::string bad = temp_file("bad_tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {}}})");
  CliResult r = run_headwise("tokenize '" + bad + "' --text x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad_tokenizer.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("WordPiece"), std::string::npos) << r.err;
  r = run_headwise("tokenize /nonexistent/tokenizer.json --text x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/tokenizer.json"), std::string::npos) << r.err;
  r = run_headwise("tokenize '" + kSpm + "' --text x --file y");
  EXPECT_EQ(r.code, 2);
  r = run_headwise("tokenize '" + kSpm + "'");
  EXPECT_EQ(r.code, 2);
  r = run_headwise("tokenize '" + kSpm + "' --file /nonexistent/text.txt");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/text.txt"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace headwise::test
