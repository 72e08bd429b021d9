// Writing NumPy .npy files (format 1.0): little-endian float32, C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headwise/status.hpp"

namespace headwise::tools {

Status write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);

}  // namespace headwise::tools
