// Fuzz target: the llama2.c tokenizer.bin reader and the tokenizer it builds
// (runtime/tokenizer.cpp). Input: a tokenizer.bin; the vocabulary size asked for is the
// number of whole pieces the file holds (so real files are seeds as they are).
// Property: any file gives a Status, never a crash, hang or huge allocation; asking
// for one piece more than the file holds is an error; a loaded tokenizer encodes and
// decodes text, and saving it then loading it again encodes the same way.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz/fuzz_file.hpp"
#include "headwise/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using headwise::Tokenizer;
  // Walk the layout: int32 max_token_length, then (float score, int32 len, len bytes)*.
  int vocab = 0;
  for (size_t off = 4; off + 8 <= size && vocab < 65536; ++vocab) {
    int32_t len;
    std::memcpy(&len, data + off + 4, 4);
    if (len < 0 || size_t(len) > size - off - 8) break;
    off += 8 + size_t(len);
  }
  if (vocab == 0) vocab = 1;
  static headwise::fuzz::MemFile file("tokenizer"), saved("tokenizer-saved");
  const std::string& path = file.write(data, size);
  std::unique_ptr<Tokenizer> tok;
  if (Tokenizer::load(path, vocab + 1, &tok).ok()) {
    std::fprintf(stderr, "loaded %d pieces from a file that holds %d\n", vocab + 1, vocab);
    std::abort();
  }
  if (!Tokenizer::load(path, vocab, &tok).ok()) return 0;
  if (tok->vocab_size() != vocab) std::abort();
  static const std::string text = std::string("Once upon a time, \xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "de\xff\x80 ") + '\0' + "end";
  const std::vector<int32_t> ids = tok->encode(text, true);
  int32_t prev = Tokenizer::kBos;
  for (int32_t id : ids) {
    // (byte-fallback ids, byte + 3, may lie outside a tiny vocabulary: decoding them
    // must still be safe)
    tok->decode(prev, id);
    tok->piece_bytes(prev, id);
    prev = id;
  }
  // save() writes to a path; a memfd's /proc path is writable too.
  saved.write(nullptr, 0);
  if (!tok->save(saved.path()).ok()) return 0;
  std::unique_ptr<Tokenizer> again;
  const headwise::Status s = Tokenizer::load(saved.path(), vocab, &again);
  if (!s.ok()) {
    std::fprintf(stderr, "a saved tokenizer does not load again: %s\n", s.message().c_str());
    std::abort();
  }
  if (again->encode(text, true) != ids) std::abort();
  return 0;
}
