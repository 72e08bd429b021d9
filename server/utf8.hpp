// UTF-8 boundaries for streamed text: generated tokens may end inside a character
// (byte-fallback pieces carry one byte each), and an SSE chunk must never split one.
#pragma once

#include <cstddef>
#include <string>

namespace headwise::server {

// Length of the longest prefix of `s` that does not end inside an incomplete UTF-8
// sequence: a trailing lead byte with fewer continuation bytes than it announces is
// held back (at most 3 bytes). Invalid bytes are not held back (they can never
// complete); the JSON writer replaces them with U+FFFD.
size_t utf8_complete_prefix(const std::string& s);

}  // namespace headwise::server
