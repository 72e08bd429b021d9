// splitmix64 (Steele, Lea & Flood 2014; Vigna's constants): the one seeded hash behind
// synthetic weights, benchmark tensors and random prompts.
#pragma once

#include <cstdint>

namespace headwise {

// The finaliser: a bijective mix of 64 bits.
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr uint64_t kSplitmix64Gamma = 0x9E3779B97F4A7C15ull;  // 2⁶⁴ / golden ratio

// One step of the generator: advances *state, returns the next value.
inline uint64_t splitmix64_next(uint64_t* state) { return splitmix64_mix(*state += kSplitmix64Gamma); }

// The generator's value for a single input (state x, one step).
inline uint64_t splitmix64(uint64_t x) { return splitmix64_mix(x + kSplitmix64Gamma); }

}  // namespace headwise
