// One linear projection of the plan, y(M×N) = x(M×K)·W (+ b), with every decision made
// once, when the plan is built:
//   - the weights packed (f32: reordered into the blocked layout oneDNN prefers; other
//     weight types: used as stored),
//   - the registry kernel (kernels/matmul/linear.inc) for few rows, chosen by weight
//     type × the plan's ISA × the layout,
//   - for f32, oneDNN matmul primitives for a FIXED set of row classes (powers of two,
//     kMinClassRows .. kMaxClassRows): a step of M rows runs as the largest classes that
//     fit, then the small-row kernel for the rest. Memory does not grow with the number
//     of distinct prompt lengths (the cache this replaces was keyed on M).
// run() only executes: no allocation (the caller brings scratch_bytes() of scratch), no
// locks; safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headwise/status.hpp"
#include "kernels/matmul/gemm_bf16_amx.hpp"
#include "kernels/matmul/linear.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {

class WeightArena;
class Widened16;
class Projection;

// One projection, or several of the same input (a layer's q, k and v; gate and up) in
// one parallel region, when M rows can be sliced (Projection::can_slice; decode): each
// thread takes an equal share of their weight bytes, as output-row slices, preparing
// its own copy of the inputs (once for the projections of one kernel and K in its share:
// Projection::prepare_slices), so the threads start and meet once instead of once per
// projection (on this project's 2-core VM a parallel region costs ~3 us and a barrier
// ~1.4 us: a 768x768 Q4_K product streams in ~4 us). Otherwise, or with one thread,
// or with less than threads x the largest slice_scratch_bytes(M) of scratch: one run()
// after the other. ys[i] (rows ldys[i] apart) is ps[i]'s output.
//
// `balance` (optional, one per call site: a step's node): the shares follow how fast each
// thread finished its last ones (ShareBalance), so a core slowed by another tenant or a
// type that costs more per byte (Q6_K beside Q4_K) gets fewer bytes next time. Which
// thread computes an output row never changes the row: the results are identical.
struct ShareBalance {
  static constexpr int kMaxThreads = 16;  // more: equal shares
  int threads = 0;                        // speeds are for this many (0: none yet)
  float speed[kMaxThreads] = {};          // relative bytes per time, mean 1
};
Status run_projections(const Projection* const* ps, int count, const float* x, int64_t ldx, float* const* ys,
                       const int64_t* ldys, int M, int threads, void* scratch, size_t scratch_bytes,
                       ShareBalance* balance = nullptr);
// The scratch run_projections needs to split M rows over `threads` threads.
size_t projections_scratch_bytes(const Projection* const* ps, int count, int M, int threads);

class Projection {
 public:
  static constexpr int kMinClassRows = 16;    // below: the small-row kernel
  static constexpr int kMaxClassRows = 1024;  // above: several passes
  // BF16 weights (oneDNN bf16 matmul): classes up to 256 rows, so the bf16 copy of the
  // inputs in scratch stays ≤ 256·K·2 bytes; oneDNN runs 256 rows as fast as 1024.
  static constexpr int kMaxBf16ClassRows = 256;
  // Quantized weights on AMX (create_typed): rows from which prefill dequantizes them
  // into bf16 chunks for oneDNN's matmul (fewer: the registry kernel's int8 tiles).
  // Measured on the AMX VM (2026-12-04, 2 threads, 768×2048, 2048×768 and 2048×8192,
  // Q8_0 / Q4_K / Q6_K, the whole matrix dequantized at once; GFLOP/s int8 tiles /
  // dequantized bf16): 64 rows 360-570 / 260-490, 96 rows 355-575 / 320-510, 128 rows
  // 365-600 / 415-705, 256 rows 360-590 / 655-965, 512 rows 370-580 / 875-1135.
  static constexpr int kDequantMinRows = 128;
  // The same where the dequantized rows go to the AMX panels instead (kernels::
  // amx_usable(); gemm_bf16_amx.hpp). Measured on the AMX VM (2026-12-05, 2 threads,
  // headwise bench, Q4_K_M, prefill tok/s int8 tiles / panels, two runs each):
  // llama-1b-like 32 rows 231-233 / 153-162, 64 rows 256-257 / 255-266, 80 rows
  // 248-251 / 293-302, 96 rows 241-255 / 337-348, 112 rows 257-266 / 359-385;
  // llama-134m 64 rows 2211-2217 / 2197-2445, 96 rows 2312-2421 / 2877-3029.
  static constexpr int kAmxDequantMinRows = 64;
  // Tests: 1 forces that path (and BF16 rows read in place by the same matmul,
  // Widened16::create_bf16_rows) wherever oneDNN has a bf16 matmul (AVX512-BF16), 0 keeps
  // both off, -1 restores detection (oneDNN's bf16 matmul on AMX). Read by create_typed.
  static void set_dequant_prefill_override(int v);

  // f32 weights: element (k, n) of the logical K×N weight at w[k·stride_k + n·stride_n]
  // ([N][K] PyTorch Linear storage: stride_k = 1, stride_n = K). bias: N floats or null.
  // Copied (reordered); w may be released afterwards.
  // `arena`: where the projection's own copy of its weights goes (the plan's, so that
  // the plan keeps them on huge pages in the order decode runs them; weight_arena.hpp);
  // it must outlive the projection. Null: a mapping of the projection's own.
  static Status create_f32(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                           const float* bias, kernels::Isa isa,
                           std::unique_ptr<Projection>* out, WeightArena* arena = nullptr);
  // Weights of another registry type, as stored: [N][K] rows of `type` blocks. Not
  // copied: `w` must outlive the projection (it points into the mapped file).
  static Status create_typed(kernels::WeightType type, const void* w, int K, int N,
                             const float* bias, kernels::Isa isa,
                             std::unique_ptr<Projection>* out, WeightArena* arena = nullptr);
  // Q4_1 or Q5_1 weights as stored ([N][K] rows of GGUF blocks of 32, x = d·q + m):
  // re-encoded here as Q8_0 rows of q − o, made as create_typed makes Q8_0 (kernels,
  // panels, prefill paths), and an f32 projection of the K/32 blocks' offsets c = m + o·d
  // (kernels/quant/quant.hpp, q4_1_to_q8_0), so that y = x·W₈ + s(x)·C + b, s(x) the
  // sums of each block of 32 inputs (projection_offsets.cpp). The stored rows are read
  // once here; the Q8_0 copy takes 34 bytes a block (Q4_1: 20, Q5_1: 24), the offsets 4
  // more. Why not a kernel of their own: these are llama-quantize's stand-ins where a
  // K-quant row is not whole 256-blocks (Q5_1 for Q5_K), and this way every Q8_0 path
  // serves them (measured, llama-134m: decode within 0–15% of Q8_0's, prefill ~70% of it).
  // Q4_0C and Q8_0C (Hugging Face GPTQ/AWQ weights with zero points, kernels/quant/blocks.hpp)
  // are split the same way into Q4_0 / Q8_0 rows (4.5 / 8.5 bits a weight) and their offsets.
  static Status create_offset_blocks(kernels::quant::WType type, const void* w, int K, int N,
                                     const float* bias, kernels::Isa isa,
                                     std::unique_ptr<Projection>* out, WeightArena* arena = nullptr);
  ~Projection();

  // Inputs gathered as x'(k) = x(perm[k]) before every product (run, run_slice): the
  // weights' columns were stored permuted (TensorView::perm, GPTQ act-order). perm: K
  // entries, a permutation of 0..K−1 (else invalid_argument); copied.
  Status set_input_permutation(const int32_t* perm);

  // y = x·W (+ b) for M rows; x rows ldx floats apart, y rows ldy apart. `threads` ≥ 1
  // OpenMP threads. `scratch`: scratch_bytes(M) bytes (or more), 64-byte aligned.
  // oneDNN reads the calling thread's omp max-threads setting, so it is set to `threads`
  // for the call and restored before returning.
  Status run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
             void* scratch) const;

  // A SwiGLU FFN's gate (this) and up projections in one product (Widened16::run_gated):
  // the rows of M it computes when both run M rows on AMX panels of one shape
  // (Widened16::rows_taken(M)), else 0 — the caller runs them apart, and the rest of
  // M's rows too.
  int gated_rows(const Projection& up, int M) const;
  // y = combine(x·Wg, x·Wu) for gated_rows(up, M) rows (> 0); scratch: scratch_bytes(M).
  Status run_gated(const Projection& up, kernels::AmxCombine combine, const float* x, int64_t ldx, float* y,
                   int64_t ldy, int M, int threads, void* scratch) const;

  // Scratch run() needs for up to `rows` rows per call (monotone in rows).
  size_t scratch_bytes(int rows) const;

  // Shares of one product, for run_projections (projection_group.cpp): can M rows run
  // as output-row slices on the small-row kernel (M below every oneDNN class and within
  // the kernel's rows)? Slices start at multiples of slice_rows() (a repacked panel pair,
  // an f32 output block, a stored row); run_slice computes y's columns [n0, n1) on the
  // calling thread alone (no parallel region), with slice_scratch_bytes(M) of scratch.
  // Each output is computed as run() computes it: the results are identical.
  bool can_slice(int M) const;
  int slice_rows() const;
  size_t slice_scratch_bytes(int M) const;
  void run_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                 void* scratch) const;
  // run_slice in two parts, for a thread that runs many slices of one call: the inputs
  // prepared once (prepare_slices, into slice_scratch_bytes(M) of scratch), then any
  // number of slices from them (run_prepared_slice, the same x and scratch); results
  // identical to run_slice's. prepares_slices() false (inputs gathered for act-order,
  // offset blocks, a kernel without LinearKernelImpl::prepare): run_slice alone.
  // same_slice_input(o): both prepare and o's prepare_slices leaves what this one's would
  // (one kernel entry, one K), so one prepare serves both.
  bool prepares_slices() const;
  bool same_slice_input(const Projection& o) const;
  void prepare_slices(const float* x, int64_t ldx, int M, void* scratch) const;
  void run_prepared_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                          void* scratch) const;

  int K() const { return K_; }
  int N() const { return N_; }
  size_t weight_bytes() const { return weight_bytes_; }
  kernels::WeightType type() const { return packed_.type; }
  // The kernel(s) M rows run on, e.g. "oneDNN:brg:avx512_core×512 + gemv_blocked:avx512×8".
  std::string implementation(int M) const;
  // The small-row kernel ("gemv_blocked:avx512"), or "" when oneDNN takes every row.
  std::string small_kernel() const;

 private:
  struct Onednn;
  Projection() = default;
  // Row counts run() hands to one call, in order: classes, then small-kernel passes.
  template <class F>
  void split_rows(int M, bool dense, F&& f) const;
  size_t staging_bytes(int rows) const;
  // Bytes of dense staging a pass of `rows` strided rows takes (see split_rows).
  size_t strided_stage_bytes(int rows) const;
  // run() and scratch_bytes() of the weights themselves; the offset blocks' term
  // (projection_offsets.cpp) goes after them.
  Status run_stored(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads, void* scratch) const;
  size_t stored_scratch_bytes(int rows) const;
  Status add_offsets(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads, void* scratch) const;
  size_t offsets_scratch_bytes(int rows) const;
  void add_offsets_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                         void* scratch) const;
  size_t offsets_slice_scratch_bytes(int M) const;
  std::string stored_implementation(int M) const;
  int stored_slice_rows() const;
  static Status create_f32_in(const float* w, int K, int N, int64_t stride_k, int64_t stride_n, const float* bias,
                              kernels::Isa isa, bool plain, bool accumulate, std::unique_ptr<Projection>* out,
                              WeightArena* arena);
  Status prepare_bf16_onednn(const uint16_t* w, kernels::Isa isa);  // BF16 prefill (see projection.cpp)
  Status repack_weights(WeightArena* arena);       // the small kernel's own layout (see projection.cpp)
  Status copy_mapped_rows(WeightArena* arena);     // stored rows out of a file mapping (ditto)
  void* own_memory(size_t bytes, WeightArena* arena);

  int K_ = 0, N_ = 0;
  size_t weight_bytes_ = 0;
  kernels::PackedWeights packed_;
  // The projection's own copy of its weights when it was made without an arena, an
  // anonymous mapping of `bytes` (huge pages where it can, weight_arena.hpp): the small
  // kernel's repacked layout (LinearKernelImpl::repack), oneDNN's blocked f32 layout, or
  // 16-bit rows copied out of a file mapping.
  struct Mapping {
    void* p = nullptr;
    size_t bytes = 0;
    Mapping() = default;
    Mapping(void* p_, size_t n) : p(p_), bytes(n) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    Mapping& operator=(Mapping&& o) noexcept {
      std::swap(p, o.p);
      std::swap(bytes, o.bytes);
      return *this;
    }
    ~Mapping();
  };
  Mapping own_;
  const float* bias_ = nullptr;            // N floats, or null
  std::vector<float> bias_copy_;           // typed projections own their bias copy
  const kernels::LinearKernel* small_ = nullptr;  // registry kernel, or null
  std::unique_ptr<Onednn> dnn_;            // f32, and bf16 on a CPU with AVX512-BF16
  std::unique_ptr<Widened16> widen_;       // prefill of f16 (avx512), of bf16 where its dot is slow
  // create_offset_blocks: the blocks' offsets, K/32 → N (f32, plain layout: it slices
  // with the weights), and the Q8_0 rows while the kernel reads them as they are (not
  // repacked).
  std::unique_ptr<Projection> offsets_;
  std::vector<uint8_t> reencoded_;
  std::vector<int32_t> in_perm_;  // set_input_permutation; empty: inputs in order
  // The M gathered rows (K floats each) at the front of scratch, when in_perm_ is set.
  size_t perm_bytes(int M) const;
  const float* gather(const float* x, int64_t ldx, int M, int threads, void* scratch) const;
  Status run_in_order(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads, void* scratch) const;
  void run_slice_in_order(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                          void* scratch) const;
  kernels::PackedWeights slice_weights(int n0, int n1) const;  // output rows [n0, n1) as a packing
};

}  // namespace headwise::graph
