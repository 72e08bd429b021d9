// Turns the bytes of generated tokens into the text a client sees: cut at the first
// stop string (which is not included), and with streaming, held back while it might
// still be the start of a stop string or ends inside a UTF-8 character, so what has
// been sent never needs to be taken back.
#pragma once

#include <string>
#include <vector>

namespace headwise::server {

class TextAssembler {
 public:
  explicit TextAssembler(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}

  // Adds one token's bytes; returns the text that is now safe to send. When a stop
  // string completes, returns the text before it, sets *stopped, and drops the rest.
  std::string push(const std::string& bytes, bool* stopped);
  // The held-back tail at the end of generation (no stop string matched).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace headwise::server
