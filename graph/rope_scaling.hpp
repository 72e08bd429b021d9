// RoPE frequency scaling: per-pair divisors of the rotation frequency (Settings::
// rope_freq_factors), as Llama 3.1+ checkpoints use ("rope_scaling": {"rope_type":
// "llama3", ...} in config.json; the rope_freqs tensor in llama.cpp's GGUF files).
#pragma once

#include <vector>

#include "graph/description.hpp"

namespace headwise::graph {

// The divisors HF's _compute_llama3_parameters applies (Meta's apply_scaling): pairs
// whose wavelength 2π/freq is below original_max/high_freq_factor keep their
// frequency, those above original_max/low_freq_factor are divided by `factor`, and the
// band between is interpolated: f = 1 / ((1 − s)/factor + s) with
// s = (original_max/wavelength − low) / (high − low).
std::vector<float> llama3_rope_freq_factors(double theta, int head_dim, double factor,
                                            double low_freq_factor, double high_freq_factor,
                                            double original_max_pos);

// Overwrites (max_seq_len, head_dim/2) RoPE tables with the angles
// pos · θ^(−2i/head_dim) / rope_freq_factors[i] (computed in double).
void rope_scaled_tables(const Settings& s, float* cos_table, float* sin_table);

}  // namespace headwise::graph
