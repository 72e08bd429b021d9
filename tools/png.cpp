#include "tools/png.hpp"

#include <algorithm>
#include <cstdio>

namespace headwise::tools {
namespace {

void put32(std::string* s, uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s->push_back(char((v >> sh) & 0xFF));
}

// length, type, data, CRC-32 over type + data
void chunk(std::string* png, const char* type, const std::string& data) {
  put32(png, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png->append(body);
  put32(png, crc32(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t adler32(const uint8_t* data, size_t n) {
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < n; ++i) {
    a = (a + data[i]) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

std::string encode_png(int width, int height, const std::vector<uint8_t>& rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != size_t(width) * height * 3) return {};
  // Raw scanlines: filter type 0 (none), then the row's bytes.
  std::vector<uint8_t> raw;
  raw.reserve(size_t(height) * (1 + size_t(width) * 3));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), rgb.begin() + size_t(y) * width * 3, rgb.begin() + size_t(y + 1) * width * 3);
  }
  // zlib: CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (0x7801 % 31 == 0, no dictionary),
  // stored blocks of at most 65535 bytes (BFINAL on the last, LEN, ~LEN little-endian),
  // then the Adler-32 of the raw data, big-endian.
  std::string z = "\x78\x01";
  size_t at = 0;
  do {
    const size_t len = std::min<size_t>(65535, raw.size() - at);
    z.push_back(at + len == raw.size() ? 1 : 0);
    z.push_back(char(len & 0xFF));
    z.push_back(char(len >> 8));
    z.push_back(char(~len & 0xFF));
    z.push_back(char((~len >> 8) & 0xFF));
    z.append(reinterpret_cast<const char*>(raw.data()) + at, len);
    at += len;
  } while (at < raw.size());
  put32(&z, adler32(raw.data(), raw.size()));

  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put32(&ihdr, width);
  put32(&ihdr, height);
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, filter 0, no interlace
  chunk(&png, "IHDR", ihdr);
  chunk(&png, "IDAT", z);
  chunk(&png, "IEND", "");
  return png;
}

bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb,
               std::string* error) {
  const std::string png = encode_png(width, height, rgb);
  if (png.empty()) {
    *error = path + ": bad image size " + std::to_string(width) + "x" + std::to_string(height);
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = path + ": cannot open for writing";
    return false;
  }
  const bool ok = std::fwrite(png.data(), 1, png.size(), f) == png.size();
  if (std::fclose(f) != 0 || !ok) {
    *error = path + ": write failed";
    return false;
  }
  return true;
}

}  // namespace headwise::tools
