// Tokenization throughput of headwise on one text: loads a tokenizer (tokenizer.json,
// GGUF, or a llama2.c tokenizer.bin with --vocab N), encodes the text --runs times and
// prints one JSON line: {"seconds": [...], "bytes": N, "tokens": N, "ids_hash": H}.
// bench/tokenizer_throughput.py runs it next to HF tokenizers and prints the ratio.
//
// usage: tokenizer_bench TOKENIZER TEXT_FILE [--runs N] [--vocab N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf.hpp"
#include "headwise/tokenizer.hpp"
#include "runtime/tokenizer_load.hpp"

using namespace headwise;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER TEXT_FILE [--runs N] [--vocab N]\n");
    return 2;
  }
  int runs = 5, vocab = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--vocab")) vocab = std::atoi(argv[i + 1]);
  }
  const std::string path = argv[1];
  std::unique_ptr<Tokenizer> tok;
  Status s;
  if (vocab > 0) {
    s = Tokenizer::load(path, vocab, &tok);
  } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0) {
    std::unique_ptr<formats::GgufFile> g;
    s = formats::GgufFile::open(path, &g);
    if (s.ok()) s = tokenizer_from_gguf(*g, &tok);
  } else {
    s = tokenizer_from_hf(path, &tok);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::ifstream f(argv[2], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<double> secs;
  std::vector<int32_t> ids;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    ids = tok->encode(text, EncodeOptions{false, false});
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids, to compare with the reference
  for (int32_t id : ids) h = (h ^ uint64_t(uint32_t(id))) * 1099511628211ull;
  std::printf("{\"seconds\": [");
  for (size_t i = 0; i < secs.size(); ++i) std::printf("%s%.6f", i ? ", " : "", secs[i]);
  std::printf("], \"bytes\": %zu, \"tokens\": %zu, \"ids_hash\": \"%016llx\"}\n", text.size(), ids.size(),
              static_cast<unsigned long long>(h));
  return 0;
}
