// A minimal PNG writer (8-bit RGB, no libpng): the image rows, each behind filter
// byte 0, in a zlib stream of uncompressed ("stored") deflate blocks, with the CRC-32
// of every chunk and the Adler-32 of the stream. Files are larger than a compressing
// encoder's, but every decoder reads them and the code stays small.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headwise::tools {

// `rgb`: height rows of width·3 bytes. Returns the PNG file's bytes (empty when the
// sizes are non-positive or do not match rgb.size()).
std::string encode_png(int width, int height, const std::vector<uint8_t>& rgb);

// encode_png() written to `path`; false with *error set when it cannot be.
bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb,
               std::string* error);

uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0);  // PNG/zlib CRC-32
uint32_t adler32(const uint8_t* data, size_t n);                  // zlib Adler-32

}  // namespace headwise::tools
