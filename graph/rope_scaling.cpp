#include "graph/rope_scaling.hpp"

#include <cmath>
#include <cstdint>

namespace headwise::graph {

std::vector<float> llama3_rope_freq_factors(double theta, int head_dim, double factor,
                                            double low_freq_factor, double high_freq_factor,
                                            double original_max_pos) {
  const double low_wavelen = original_max_pos / low_freq_factor;
  const double high_wavelen = original_max_pos / high_freq_factor;
  std::vector<float> f(static_cast<size_t>(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(theta, 2.0 * i / head_dim);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      f[i] = 1.0f;
    } else if (wavelen > low_wavelen) {
      f[i] = static_cast<float>(factor);
    } else {
      const double smooth = (original_max_pos / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f[i] = static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return f;
}

void rope_scaled_tables(const Settings& s, float* cos_table, float* sin_table) {
  const int half = s.head_dim / 2;
  for (int i = 0; i < half; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(s.rope_theta), 2.0 * i / s.head_dim) /
                        s.rope_freq_factors[i];
    for (int pos = 0; pos < s.max_seq_len; ++pos) {
      const double val = pos * freq;
      cos_table[int64_t(pos) * half + i] = static_cast<float>(std::cos(val));
      sin_table[int64_t(pos) * half + i] = static_cast<float>(std::sin(val));
    }
  }
}

}  // namespace headwise::graph
