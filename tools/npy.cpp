#include "tools/npy.hpp"

#include <cstdio>
#include <memory>

namespace headwise::tools {

Status write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  size_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
    n *= static_cast<size_t>(shape[i]);
  }
  dict += "), }";
  // magic (6) + version (2) + header length (2) + dict + '\n', padded to 64 bytes
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return io_error(path + ": cannot open for writing");
  const uint16_t hlen = static_cast<uint16_t>(dict.size());
  const unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                  static_cast<unsigned char>(hlen & 0xff),
                                  static_cast<unsigned char>(hlen >> 8)};
  if (std::fwrite(head, 1, 10, f.get()) != 10 ||
      std::fwrite(dict.data(), 1, dict.size(), f.get()) != dict.size() ||
      std::fwrite(data, sizeof(float), n, f.get()) != n)
    return io_error(path + ": write failed");
  if (std::fclose(f.release()) != 0) return io_error(path + ": write failed");
  return Status::Ok();
}

}  // namespace headwise::tools
