// Opening files named by users (models, weights, tokenizers, texts): only regular files
// are read. A FIFO blocks open() until a writer comes and a device such as /dev/zero
// never ends, so both are refused before a byte is read; a directory, an empty path
// and a missing file each get a message of their own. `what` names the role of the
// file in messages ("model description", "tokenizer file", ...).
#pragma once

#include <cstdint>
#include <string>

#include "headwise/status.hpp"

namespace headwise::graph {

// Opens `path` read-only when it is a regular file: *fd (the caller closes it) and its
// size. Never blocks, whatever the path names.
Status open_input_file(const std::string& path, const std::string& what, int* fd, uint64_t* size);

// The same checks without keeping the file open (for readers that use stdio).
Status check_input_file(const std::string& path, const std::string& what);

// The whole file, refused (naming both sizes) when it is larger than max_bytes.
Status read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                       std::string* out);

}  // namespace headwise::graph
