// libFuzzer target for the tokenizer.json reader and the tokenizers it builds: any bytes
// must load or fail with a Status; a tokenizer that loads must encode and decode any
// text (the input itself, with and without special-token parsing) without crashing,
// and every id it returns must be inside the vocabulary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "headwise/tokenizer.hpp"
#include "runtime/tokenizer_load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<headwise::Tokenizer> tok;
  if (!headwise::tokenizer_from_hf_json(bytes, "fuzz.json", &tok).ok()) return 0;
  for (bool parse : {false, true}) {
    const auto ids = tok->encode(bytes, headwise::EncodeOptions{true, parse});
    for (int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    headwise::Utf8Stream stream;
    int32_t prev = -1;
    for (int32_t id : ids) {
      (void)stream.push(tok->decode(prev, id));
      prev = id;
    }
    (void)stream.finish();
    (void)tok->decode(ids, parse);
  }
  return 0;
}
