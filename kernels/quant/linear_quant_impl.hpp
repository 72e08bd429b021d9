// The linear-registry entry (kernels/matmul/linear.inc) of a weight type × ISA that
// reads weights as stored: the catalogue's product kernel (quant.hpp, quant.inc) behind
// the LinearKernelImpl interface. Used by F16/BF16 on every ISA and by every type's
// scalar entry (the integer types' x86 entries read 8-row panels: interleave_x86.hpp,
// panel_k_x86.hpp). run(): inputs prepared once per row into scratch (fp32, bf16 or
// int8 blocks, in parallel over rows), then each thread multiplies a contiguous run of
// output rows of W by all inputs, one weight row at a time, then adds the bias.
#pragma once

#include <algorithm>

#include "kernels/matmul/linear.hpp"
#include "kernels/quant/gemv_rows.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::kernels::quant {
namespace {

// kVnniBf16: the entry uses AVX512-VNNI/BF16 too; on an AVX-512 CPU without them it
// declines (supports() is false) and the registry falls to the avx2 entry.
// Prep: how an input row is prepared (the x86 entries pass dot_x86.hpp's prepare_x86).
using PrepFn = void (*)(ActKind, const float*, void*, int64_t);
template <WType T, WeightType RT, GemvFn Fn, bool kVnniBf16, PrepFn Prep = prepare_activations>
struct QuantLinear {
  static const TypeInfo& info() { return *type_info(T); }
  static bool supports(const PackedWeights& w) {
    if (kVnniBf16 && !cpu_has_avx512_vnni_bf16()) return false;
    return w.type == RT && w.data && w.NB == 1 && w.K % info().block == 0 &&
           w.row_bytes == int64_t(row_bytes(info(), w.K));
  }
  static size_t act_bytes(int K) { return (act_row_bytes(info().act, K) + 63) / 64 * 64; }
  static size_t scratch_bytes(const PackedWeights& w, int rows) { return size_t(rows) * act_bytes(w.K); }
  // run(), prepare(), run_prepared(): StepsEntry (gemv_rows.hpp) over steps().
  static void steps(const PackedWeights& w, const float* bias, const float* x, int64_t ldx, float* y,
                    int64_t ldy, int rows, int threads, void* scratch, Steps part) {
    auto* xa = static_cast<uint8_t*>(scratch);
    const size_t ab = act_bytes(w.K);
    // Output rows per thread in groups of 4 (once the widest stored-row prefill tile;
    // kept so that the split over threads stays as it was).
    constexpr int64_t G = 4;
    const int64_t groups = (int64_t(w.N) + G - 1) / G;
    const int nt = int(std::max<int64_t>(1, std::min<int64_t>(threads, std::max<int64_t>(groups, rows))));
    auto prepare = [&](int r) { Prep(info().act, x + r * ldx, xa + r * ab, w.K); };
    auto share = [&](int t, int n) {
      const int64_t n0 = std::min<int64_t>(w.N, G * (groups * t / n));
      const int64_t n1 = std::min<int64_t>(w.N, G * (groups * (t + 1) / n));
      if (n0 < n1) {
        Fn(w.data, size_t(w.row_bytes), n0, n1, xa, ab, rows, w.K, y, ldy);
        if (bias)
          for (int r = 0; r < rows; ++r)
            for (int64_t j = n0; j < n1; ++j) y[r * ldy + j] += bias[j];
      }
    };
    prepare_then_share(rows, nt, prepare, share, part);
  }
  static constexpr LinearKernelImpl impl(const char* name) {
    using E = StepsEntry<QuantLinear>;
    return {name, 0, supports, scratch_bytes, E::run, nullptr, nullptr, 0, nullptr, nullptr, E::prepare, E::run_prepared};
  }
};

}  // namespace
}  // namespace headwise::kernels::quant
