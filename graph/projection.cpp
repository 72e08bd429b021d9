#include "graph/projection.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <oneapi/dnnl/dnnl.hpp>

#include "graph/omp_rows.hpp"
#include "graph/onednn_context.hpp"
#include "graph/weight_arena.hpp"
#include "graph/weights.hpp"
#include "graph/widened16.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The row count the weight layout is chosen for. oneDNN 2.6 picks the same blocked
// layout for M = 1 and M = 1024 on the shapes we use, so one reorder serves every row
// class (implementation() shows what a given M runs).
constexpr int kLayoutRows = 256;

// Primitives are made for dense rows (ldx = K, ldy = N): the plan's memory plan keeps
// activations dense, and oneDNN 2.6 runs strided matmuls on its reference path.
// src_dt: f32, or bf16 for BF16 weights (oneDNN 2.6 multiplies bf16 by bf16 only).
// sum: the product is added to what dst holds (a post-op), not written over it.
dnnl::matmul::primitive_desc make_pd(int M, int K, int N, const memory::desc& wmd, bool bias,
                                     dt src_dt = dt::f32, bool sum = false) {
  const memory::desc src({M, K}, src_dt, tag::ab);
  const memory::desc dst({M, N}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the session brings scratch
  if (sum) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  if (bias) {
    const memory::desc bmd({1, N}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, bmd, dst), attr, cpu_engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, dst), attr, cpu_engine());
}

// Recognises oneDNN's [N/NB][K/KB][KB][NB] layout, or its plain "ab" one (PackedWeights, f32),
// from its descriptor.
kernels::PackedWeights describe_blocked(const memory::desc& md, const float* data, int K, int N) {
  kernels::PackedWeights b;
  b.K = K;
  b.N = N;
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 2 || d.offset0 != 0) return b;
  const dnnl_blocking_desc_t& blk = d.format_desc.blocking;
  if (blk.inner_nblks == 0 && blk.strides[1] == 1 && blk.strides[0] >= N && d.padded_dims[0] == K &&
      d.padded_dims[1] == N) {  // plain "ab": oneDNN's gemm on a CPU without brgemm
    b.data = data;
    b.KB = b.NB = 0;
    b.Kp = K;
    b.ld = blk.strides[0];
    return b;
  }
  if (blk.inner_nblks != 2 || blk.inner_idxs[0] != 0 || blk.inner_idxs[1] != 1) return b;
  const int KB = static_cast<int>(blk.inner_blks[0]), NB = static_cast<int>(blk.inner_blks[1]);
  const int64_t Kp = d.padded_dims[0], Np = d.padded_dims[1];
  if (Kp % KB || Np % NB || blk.strides[0] != int64_t(KB) * NB || blk.strides[1] != Kp * NB) return b;
  b.data = data;
  b.KB = KB;
  b.NB = NB;
  b.Kp = static_cast<int>(Kp);
  return b;
}

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

// Prefill of quantized weights on oneDNN's bf16 matmul over chunks dequantized per call
// (Widened16::create_dequant), where that matmul runs on AMX: asked once (a 256 × 768 ×
// 768 primitive's implementation), or forced by tests.
std::atomic<int> dequant_prefill_override{-1};
bool onednn_bf16_on_amx() {
  static const bool amx = [] {
    try {
      const memory::desc any({768, 768}, dt::bf16, tag::any);
      return std::string(make_pd(256, 768, 768, any, false, dt::bf16).impl_info_str()).find("amx") != std::string::npos;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return amx;
}
bool dequant_prefill() {
  const int o = dequant_prefill_override.load();
  return o >= 0 ? o != 0 : onednn_bf16_on_amx();
}

}  // namespace

void Projection::set_dequant_prefill_override(int v) { dequant_prefill_override.store(v < 0 ? -1 : v != 0); }

struct Projection::Onednn {
  struct Class {
    int rows = 0;
    dnnl::matmul prim;
    size_t pad_bytes = 0;
    std::string impl;
  };
  memory::desc wmd;   // the blocked layout
  memory weights;     // reordered, owned by oneDNN
  memory bias;        // (1, N) or empty
  std::vector<Class> classes;  // ascending rows
  bool bf16 = false;  // bf16 weights and inputs (inputs rounded into staging per call)
  bool sum = false;   // the classes add to y (create_f32_in's accumulate; the small kernel does not)
};

Projection::~Projection() = default;

Projection::Mapping::~Mapping() {
  if (p) munmap(p, bytes);
}

// The memory of the projection's own weight copy: the plan's arena (see
// weight_arena.hpp: huge pages, in the order decode runs the projections), or, for a
// projection made on its own, a mapping of its own on huge pages from 2 MiB up.
void* Projection::own_memory(size_t bytes, WeightArena* arena) {
  if (arena) return arena->allocate(bytes);
  size_t mapped = 0;
  void* p = map_huge(bytes, &mapped);
  if (p) own_ = {p, mapped};
  return p;
}

Status Projection::create_f32(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                              const float* bias, kernels::Isa isa, std::unique_ptr<Projection>* out,
                              WeightArena* arena) {
  return create_f32_in(w, K, N, stride_k, stride_n, bias, isa, /*plain=*/false, /*accumulate=*/false, out, arena);
}

// plain: the weights in oneDNN's plain "ab" layout (W(k, n) at k·N + n) rather than the
// blocked one it prefers: its slices start at any multiple of 16 columns (slice_rows()).
// accumulate: oneDNN's classes add x·W to y (run() of whole classes only: its small
// kernel for the rows below them writes y).
Status Projection::create_f32_in(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                                 const float* bias, kernels::Isa isa, bool plain, bool accumulate,
                                 std::unique_ptr<Projection>* out, WeightArena* arena) {
  auto p = std::unique_ptr<Projection>(new Projection);
  p->K_ = K;
  p->N_ = N;
  p->dnn_ = std::make_unique<Onednn>();
  Onednn& d = *p->dnn_;
  d.sum = accumulate;
  try {
    const memory::desc any({K, N}, dt::f32, tag::any);
    d.wmd = plain ? memory::desc({K, N}, dt::f32, tag::ab) : make_pd(kLayoutRows, K, N, any, bias != nullptr).weights_desc();
    // Reorder from the caller's strided layout into the blocked one.
    const memory::desc given({K, N}, dt::f32, memory::dims{stride_k, stride_n});
    memory src(given, cpu_engine(), const_cast<float*>(w));
    // On huge pages (own_memory): decode streams it once per token.
    void* mem = p->own_memory(d.wmd.get_size(), arena);
    if (!mem)
      return Status(StatusCode::out_of_memory, "could not allocate " + std::to_string(d.wmd.get_size()) +
                                                   " bytes for the packed " + std::to_string(K) + "x" +
                                                   std::to_string(N) + " f32 weights");
    d.weights = memory(d.wmd, cpu_engine(), mem);
    dnnl::stream s(cpu_engine());
    dnnl::reorder(src, d.weights).execute(s, src, d.weights);
    if (bias) {
      d.bias = memory(memory::desc({1, N}, dt::f32, tag::ab), cpu_engine());
      std::copy(bias, bias + N, static_cast<float*>(d.bias.get_data_handle()));
      p->bias_ = static_cast<const float*>(d.bias.get_data_handle());
    }
    s.wait();
    // The mapped rows are not read by this projection again (a strided view's extent).
    if (K > 0 && N > 0)
      MappedFile::release_resident(w, (size_t(K - 1) * stride_k + size_t(N - 1) * stride_n + 1) * sizeof(float));
    p->weight_bytes_ = d.wmd.get_size();
    p->packed_ = describe_blocked(d.wmd, static_cast<const float*>(d.weights.get_data_handle()), K, N);
    p->small_ = kernels::linear_kernel(p->packed_, isa);
    // Without a small-row kernel for this layout, oneDNN takes every row count.
    for (int rows = p->small_ ? kMinClassRows : 1; rows <= kMaxClassRows; rows *= 2) {
      Onednn::Class c;
      c.rows = rows;
      auto pd = make_pd(rows, K, N, d.wmd, bias != nullptr, dt::f32, accumulate);
      c.prim = dnnl::matmul(pd);
      c.pad_bytes = pd.scratchpad_desc().get_size();
      c.impl = pd.impl_info_str();
      d.classes.push_back(std::move(c));
    }
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, std::string("oneDNN could not prepare a ") + std::to_string(K) +
                                            "x" + std::to_string(N) + " matmul: " + e.what());
  }
  *out = std::move(p);
  return Status::Ok();
}

Status Projection::create_typed(kernels::WeightType type, const void* w, int K, int N,
                                const float* bias, kernels::Isa isa,
                                std::unique_ptr<Projection>* out, WeightArena* arena) {
  const int be = kernels::weight_block_elems(type);
  if (K % be != 0)
    return invalid_argument(std::string("a ") + kernels::weight_type_name(type) + " weight needs K a multiple of " +
                            std::to_string(be) + ", got K = " + std::to_string(K));
  auto p = std::unique_ptr<Projection>(new Projection);
  p->K_ = K;
  p->N_ = N;
  kernels::PackedWeights& pw = p->packed_;
  pw.type = type;
  pw.data = w;
  pw.K = pw.Kp = K;
  pw.N = N;
  pw.KB = be;
  pw.NB = 1;
  pw.row_bytes = int64_t(K / be) * kernels::weight_block_bytes(type);
  p->weight_bytes_ = size_t(pw.row_bytes) * N;
  if (bias) {
    p->bias_copy_.assign(bias, bias + N);
    p->bias_ = p->bias_copy_.data();
  }
  p->small_ = kernels::linear_kernel(pw, isa);
  if (!p->small_)
    return Status(StatusCode::unsupported, std::string("no linear kernel for ") +
                                               kernels::weight_type_name(type) + " weights on " +
                                               kernels::isa_name(isa) + " (kernels/matmul/linear.inc)");
  if (p->small_->impl->repack) {
    const Status s = p->repack_weights(arena);
    if (!s.ok()) return s;
  } else if (MappedFile::holds(w, p->weight_bytes_)) {
    const Status s = p->copy_mapped_rows(arena);
    if (!s.ok()) return s;
  }
  // Quantized weights repacked into panels, on a CPU whose oneDNN bf16 matmul runs on
  // AMX: prefill from kDequantMinRows rows on that matmul over chunks dequantized per
  // call (widened16.hpp; 1.1-2.7× the int8 tiles' rate from 128 rows there), or from
  // kAmxDequantMinRows on the AMX panels where kernels may use AMX; fewer rows
  // (decode, small chunks) stay on the registry kernel. Null when oneDNN has no fast bf16 matmul: the kernel takes all.
  if (pw.repacked && p->small_->impl->dequant_bf16 && isa == kernels::Isa::avx512 &&
      kernels::quant::cpu_has_avx512_vnni_bf16() && dequant_prefill()) {
    const int min_rows = kernels::amx_usable() ? kAmxDequantMinRows : kDequantMinRows;  // the AMX panels' or oneDNN's
    const Status s = Widened16::create_dequant(*p->small_->impl, pw, p->bias_, min_rows, isa, &p->widen_);
    if (!s.ok()) return s;
  }
  if (type == kernels::WeightType::bf16 && isa == kernels::Isa::avx512 && kernels::quant::cpu_has_avx512_vnni_bf16()) {
    const Status s = p->prepare_bf16_onednn(static_cast<const uint16_t*>(pw.data), isa);
    if (!s.ok()) return s;
  }
  // F16 prefill on AVX-512: oneDNN's f32 matmul on rows widened per call (widened16.hpp);
  // its registry kernel reads one weight row at a time (~24 GFLOP/s a core). Null when
  // oneDNN has no fast f32 matmul here: the registry kernel takes every row count. Only
  // while the stored rows are kept: on an AVX-512 CPU without VNNI/BF16 the avx2 kernel
  // (16-row panels) is chosen and the rows are repacked into its panels.
  if (type == kernels::WeightType::f16 && isa == kernels::Isa::avx512 && !pw.repacked) {
    const Status s = Widened16::create(type, static_cast<const uint16_t*>(pw.data), K, N, p->bias_, isa, &p->widen_);
    if (!s.ok()) return s;
  }
  *out = std::move(p);
  return Status::Ok();
}

// A kernel with its own weight layout (e.g. rows interleaved so that one vector holds a
// block of several rows: one scale conversion and multiply-add per block serves them
// all) gets its copy here, once; the mapped rows are read only by this repack, and their
// resident pages are released after it (MappedFile::release_resident: otherwise the
// process holds the file's bytes and the copy). The copy replaces the stored bytes in
// weight_bytes() (what decode streams).
Status Projection::repack_weights(WeightArena* arena) {
  const kernels::LinearKernelImpl& impl = *small_->impl;
  const size_t bytes = impl.repacked_bytes(packed_);
  const int64_t G = impl.repack_rows > 0 ? impl.repack_rows : N_;
  void* mem = bytes ? own_memory(bytes, arena) : nullptr;
  if (!mem)
    return Status(StatusCode::out_of_memory, "could not allocate " + std::to_string(bytes) +
                                                      " bytes for the repacked " + std::to_string(K_) + "x" +
                                                      std::to_string(N_) + " weights of " + impl.name);
  const int64_t groups = (N_ + G - 1) / G;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) impl.repack(packed_, g * G, std::min<int64_t>(N_, (g + 1) * G), mem);
  MappedFile::release_resident(packed_.data, size_t(packed_.row_bytes) * N_);
  packed_.data = mem;
  packed_.repacked = true;
  weight_bytes_ = bytes;
  return Status::Ok();
}

// Rows a kernel reads as stored (f16, bf16; the scalar entries of the block types), when
// they lie in a file mapping: copied into the projection's own memory (own_memory), whose
// huge pages decode streams without a TLB miss every 4 KiB (the file's page-cache pages are 4 KiB),
// and the file's pages released as repack_weights() releases them. Rows in memory the
// caller owns (heap, an embedder's buffer) are read in place: a copy would double them.
Status Projection::copy_mapped_rows(WeightArena* arena) {
  const size_t bytes = size_t(packed_.row_bytes) * N_;
  void* mem = own_memory(bytes, arena);
  if (!mem)
    return Status(StatusCode::out_of_memory, "could not allocate " + std::to_string(bytes) + " bytes for the " +
                                                 std::to_string(K_) + "x" + std::to_string(N_) + " " +
                                                 kernels::weight_type_name(packed_.type) + " weights");
  const int64_t chunks = int64_t((bytes + (size_t(1) << 20) - 1) >> 20);
  const auto* src = static_cast<const uint8_t*>(packed_.data);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t at = size_t(c) << 20;
    std::memcpy(static_cast<uint8_t*>(mem) + at, src + at, std::min(bytes - at, size_t(1) << 20));
  }
  MappedFile::release_resident(packed_.data, bytes);
  packed_.data = mem;
  return Status::Ok();
}

// BF16 weights in prefill: oneDNN's bf16 matmul (brgemm on vdpbf16ps, inputs rounded to
// bf16 per call exactly as the registry kernel rounds them, fp32 sums and output), with
// the weights reordered ONCE here into the blocked layout it prefers, for the same fixed
// row classes as f32 (memory does not grow with the prompt lengths seen). The registry
// kernel runs at ~20-80 GFLOP/s per thread on many rows (one weight row at a time,
// re-reading the inputs); oneDNN at the bf16 dot-product rate (quant_bench
// prefill_projection/bf16).
//
// The packed copy is used for every row count it has a class for; fewer rows (decode)
// still read the stored rows with the registry GEMV: decode is bound by the bytes it
// streams, the packed copy has the same bytes (2 per weight), and the GEMV already
// streams them at the read bandwidth (quant_bench decode_projection/bf16), so reading
// the copy instead could not be faster (measured: oneDNN's 1-row bf16 matmul on the
// copy, K 4096 × N 8192, took the same time as the GEMV within the noise of a loaded
// machine). Memory: the packed copy is K·N·2 bytes more for the model's life, next to
// the rows decode reads (copied out of a file mapping by copy_mapped_rows). A oneDNN
// without a bf16 brgemm on this CPU (a reference implementation) is not used: the
// registry kernel is faster than that.
// Where oneDNN's bf16 matmul is not on AMX and the CPU's bf16 dot product runs below its
// fp32 FMA rate (quant::cpu_bf16_dot_slow: Intel without AMX), prefill instead widens
// the stored rows per call into fp32 chunks for oneDNN's f32 matmul (Widened16,
// widened16.hpp), with no copy kept: llama-134m BF16, 512-token prefill, 2 threads,
// 3 alternating rounds on an Emerald Rapids VM without AMX, 700-808 → 1018-1202 tok/s.
// F16 weights: oneDNN 2.6 has no f16 matmul, and converting them to bf16 would change
// the values; on AVX-512 they are widened as above (create_typed), elsewhere their
// registry kernel (the avx2 16-row panels) takes every row count.
Status Projection::prepare_bf16_onednn(const uint16_t* w, kernels::Isa isa) {
  dnn_ = std::make_unique<Onednn>();
  Onednn& d = *dnn_;
  d.bf16 = true;
  const bool has_bias = bias_ != nullptr;
  try {
    const memory::desc any({K_, N_}, dt::bf16, tag::any);
    auto pd0 = make_pd(kLayoutRows, K_, N_, any, has_bias, dt::bf16);
    const std::string impl0 = pd0.impl_info_str();
    if (impl0.find("ref") != std::string::npos) {
      dnn_.reset();
      return Status::Ok();
    }
    // Where oneDNN's bf16 matmul runs on AMX (as for the quantized types, dequant_prefill):
    // the stored rows are its weights in place (widened16.hpp), no blocked copy kept.
    if (dequant_prefill()) {
      dnn_.reset();
      return Widened16::create_bf16_rows(w, K_, N_, bias_, isa, &widen_);  // null: the registry kernel
    }
    // Without AMX, on a CPU whose bf16 dot product is slower than its fp32 FMA: the
    // stored rows widened per call into fp32 chunks (widened16.hpp), no bf16 copy.
    if (impl0.find("amx") == std::string::npos && kernels::quant::cpu_bf16_dot_slow()) {
      dnn_.reset();
      return Widened16::create(kernels::WeightType::bf16, w, K_, N_, bias_, isa, &widen_);  // null: the registry kernel
    }
    d.wmd = pd0.weights_desc();
    // The stored [N][K] rows are the K×N matrix with strides (1, K).
    const memory::desc given({K_, N_}, dt::bf16, memory::dims{1, K_});
    memory src(given, cpu_engine(), const_cast<uint16_t*>(w));
    d.weights = memory(d.wmd, cpu_engine());
    dnnl::stream s(cpu_engine());
    dnnl::reorder(src, d.weights).execute(s, src, d.weights);
    s.wait();
    if (has_bias) {
      d.bias = memory(memory::desc({1, N_}, dt::f32, tag::ab), cpu_engine());
      std::copy(bias_, bias_ + N_, static_cast<float*>(d.bias.get_data_handle()));
    }
    for (int rows = kMinClassRows; rows <= kMaxBf16ClassRows; rows *= 2) {
      Onednn::Class c;
      c.rows = rows;
      auto pd = make_pd(rows, K_, N_, d.wmd, has_bias, dt::bf16);
      c.prim = dnnl::matmul(pd);
      c.pad_bytes = pd.scratchpad_desc().get_size();
      c.impl = pd.impl_info_str();
      d.classes.push_back(std::move(c));
    }
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, "oneDNN could not prepare a bf16 " + std::to_string(K_) + "x" +
                                            std::to_string(N_) + " matmul: " + e.what());
  }
  return Status::Ok();
}

// Strided rows (x or y not dense: the K and V projections writing into an fp32 KV
// cache) go through dense staging in passes of the largest class whose staging stays
// within kStridedStageBytes (at least the smallest class). Passes of the smallest class
// (16 rows), as before session 19, cost the K and V projections of llama-134m BF16 a
// fifth of their rate: 32 oneDNN calls a 512-row prompt, 262-273 GFLOP/s against the
// dense q projection's 337-356.
constexpr size_t kStridedStageBytes = size_t(1) << 20;

size_t Projection::strided_stage_bytes(int rows) const {
  // bf16 stages only the output rows (its inputs are rounded into staging anyway)
  return size_t(rows) * ((dnn_->bf16 ? 0 : size_t(K_)) + size_t(N_)) * sizeof(float);
}

template <class F>
void Projection::split_rows(int M, bool dense, F&& f) const {
  const int small_max = small_ ? small_->impl->max_rows : 0;
  for (int r = 0; r < M;) {
    const int rem = M - r;
    int take;
    if (dnn_ && !dnn_->classes.empty() && rem >= dnn_->classes.front().rows) {
      int c = 0;  // the largest class that fits (strided rows: whose staging fits too)
      while (c + 1 < int(dnn_->classes.size()) && dnn_->classes[c + 1].rows <= rem &&
             (dense || strided_stage_bytes(dnn_->classes[c + 1].rows) <= kStridedStageBytes))
        ++c;
      take = dnn_->classes[c].rows;
      f(c, r, take);
    } else {
      take = small_max > 0 ? std::min(rem, small_max) : rem;
      f(-1, r, take);
    }
    r += take;
  }
}

// Strided rows are staged through dense ones in passes of at most kStridedStageBytes
// (split_rows), so staging does not grow with the rows per step.
// bf16: the inputs of the largest class that fits are rounded into staging (K bf16 per
// row; the classes stop at kMaxBf16ClassRows to bound it), plus the output rows of a
// strided pass.
size_t Projection::staging_bytes(int rows) const {
  if (!dnn_ || dnn_->classes.empty() || rows < dnn_->classes.front().rows) return 0;
  int big = dnn_->classes.front().rows, strided = big;
  for (const Onednn::Class& c : dnn_->classes)
    if (c.rows <= rows) {
      big = c.rows;
      if (strided_stage_bytes(c.rows) <= kStridedStageBytes) strided = c.rows;
    }
  const size_t stage = strided_stage_bytes(strided);
  return dnn_->bf16 ? round64(size_t(big) * K_ * sizeof(uint16_t)) + stage : stage;
}

size_t Projection::scratch_bytes(int rows) const {
  return perm_bytes(rows) +
         (offsets_ ? round64(stored_scratch_bytes(rows)) + offsets_scratch_bytes(rows) : stored_scratch_bytes(rows));
}

Status Projection::set_input_permutation(const int32_t* perm) {
  std::vector<char> seen(size_t(K_), 0);
  for (int k = 0; k < K_; ++k) {
    if (perm[k] < 0 || perm[k] >= K_ || seen[size_t(perm[k])])
      return invalid_argument("the input permutation's entry " + std::to_string(k) + " (" + std::to_string(perm[k]) +
                              ") is not a new index below K = " + std::to_string(K_));
    seen[size_t(perm[k])] = 1;
  }
  in_perm_.assign(perm, perm + K_);
  return Status::Ok();
}

size_t Projection::perm_bytes(int M) const {
  return in_perm_.empty() ? 0 : round64(size_t(std::max(M, 0)) * size_t(K_) * sizeof(float));
}

const float* Projection::gather(const float* x, int64_t ldx, int M, int threads, void* scratch) const {
  auto* xp = static_cast<float*>(scratch);
  const int32_t* perm = in_perm_.data();
  // (a decode step's row is a few thousand loads from L1: no parallel region for it)
  for_rows(M, threads, M >= 16, [&](int r) {
    for (int k = 0; k < K_; ++k) xp[size_t(r) * K_ + k] = x[r * ldx + perm[k]];
  });
  return xp;
}

size_t Projection::stored_scratch_bytes(int rows) const {
  size_t pad = 0, small = 0;
  if (widen_ && rows >= widen_->min_rows()) {  // widened | the small kernel for the last rows
    const int rest = std::min(rows, widen_->min_rows() - 1);
    return round64(widen_->scratch_bytes(rows)) + round64(small_->impl->scratch_bytes(packed_, rest));
  }
  const size_t staging = staging_bytes(rows);
  if (dnn_)
    for (const Onednn::Class& c : dnn_->classes)
      if (c.rows <= rows) pad = std::max(pad, c.pad_bytes);
  if (small_) {
    const int mr = small_->impl->max_rows;
    small = small_->impl->scratch_bytes(packed_, mr > 0 ? std::min(rows, mr) : rows);
  }
  return round64(pad) + round64(staging) + round64(small);
}

int Projection::gated_rows(const Projection& up, int M) const {
  if (offsets_ || up.offsets_) return 0;  // the gate's offsets come before its swiglu
  if (!in_perm_.empty() || !up.in_perm_.empty()) return 0;  // (never on the AMX panels these take)
  if (!widen_ || !up.widen_ || M < widen_->min_rows() || M < up.widen_->min_rows()) return 0;
  return widen_->can_gate(*up.widen_) ? Widened16::rows_taken(M) : 0;
}

Status Projection::run_gated(const Projection& up, kernels::AmxCombine combine, const float* x, int64_t ldx,
                             float* y, int64_t ldy, int M, int threads, void* scratch) const {
  if (gated_rows(up, M) <= 0)
    return Status(StatusCode::invalid_argument, "these projections do not run " + std::to_string(M) + " rows as a gated pair");
  return widen_->run_gated(*up.widen_, combine, x, ldx, y, ldy, M, threads, scratch);
}

Status Projection::run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                       void* scratch) const {
  if (in_perm_.empty() || M <= 0) return run_in_order(x, ldx, y, ldy, M, threads, scratch);
  const float* xp = gather(x, ldx, M, threads, scratch);
  return run_in_order(xp, K_, y, ldy, M, threads, static_cast<char*>(scratch) + perm_bytes(M));
}

Status Projection::run_in_order(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                                void* scratch) const {
  const Status s = run_stored(x, ldx, y, ldy, M, threads, scratch);
  if (!s.ok() || !offsets_ || M <= 0) return s;
  return add_offsets(x, ldx, y, ldy, M, threads, static_cast<char*>(scratch) + round64(stored_scratch_bytes(M)));
}

Status Projection::run_stored(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                              void* scratch) const {
  if (M <= 0) return Status::Ok();
  if (widen_ && M >= widen_->min_rows()) {
    const int taken = Widened16::rows_taken(M);
    const Status s = widen_->run(x, ldx, y, ldy, taken, threads, scratch);
    if (!s.ok() || taken == M) return s;
    small_->impl->run(packed_, bias_, x + taken * ldx, ldx, y + taken * ldy, ldy, M - taken, threads,
                      static_cast<char*>(scratch) + round64(widen_->scratch_bytes(M)));
    return Status::Ok();
  }
  // The same layout as scratch_bytes(M): oneDNN scratchpad | dense staging | small kernel.
  size_t pad = 0;
  const size_t staging = staging_bytes(M);
  if (dnn_)
    for (const Onednn::Class& c : dnn_->classes)
      if (c.rows <= M) pad = std::max(pad, c.pad_bytes);
  char* base = static_cast<char*>(scratch);
  char* pad_p = base;
  float* stage = reinterpret_cast<float*>(base + round64(pad));
  void* small_scratch = base + round64(pad) + round64(staging);
  Status status;
  // bf16 rounds the inputs into staging anyway: only the output rows must be dense.
  const bool dense = ldy == N_ && (ldx == K_ || (dnn_ && dnn_->bf16));
  split_rows(M, dense, [&](int cls, int r0, int rows) {
    if (!status.ok()) return;
    const float* xr = x + r0 * ldx;
    float* yr = y + r0 * ldy;
    if (cls < 0) {
      small_->impl->run(packed_, bias_, xr, ldx, yr, ldy, rows, threads, small_scratch);
      return;
    }
    const Onednn::Class& c = dnn_->classes[cls];
    const void* xd = xr;
    float* yd = yr;
    if (dnn_->bf16) {  // inputs rounded to bf16 as the registry kernel rounds them
      auto* xb = reinterpret_cast<uint16_t*>(stage);
      const size_t xbytes = kernels::quant::act_row_bytes(kernels::quant::ActKind::bf16, K_);
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int r = 0; r < rows; ++r)
        kernels::quant::prepare_activations(kernels::quant::ActKind::bf16, xr + r * ldx,
                                            reinterpret_cast<char*>(xb) + r * xbytes, K_);
      xd = xb;
      if (!dense) yd = reinterpret_cast<float*>(reinterpret_cast<char*>(stage) + round64(size_t(rows) * xbytes));
    } else if (!dense) {  // stage through dense rows (see make_pd)
      float* xs = stage;
      yd = stage + size_t(rows) * K_;
      for (int r = 0; r < rows; ++r) std::memcpy(xs + size_t(r) * K_, xr + r * ldx, K_ * sizeof(float));
      if (dnn_->sum)  // what the product is added to
        for (int r = 0; r < rows; ++r) std::memcpy(yd + size_t(r) * N_, yr + r * ldy, N_ * sizeof(float));
      xd = xs;
    }
    try {
      ScopedOmpThreads omp_threads(threads);
      thread_local dnnl::stream stream(cpu_engine());
      memory xs(memory::desc({rows, K_}, dnn_->bf16 ? dt::bf16 : dt::f32, tag::ab), cpu_engine(),
                const_cast<void*>(xd));
      memory ys(memory::desc({rows, N_}, dt::f32, tag::ab), cpu_engine(), yd);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, dnn_->weights}, {DNNL_ARG_DST, ys}};
      if (bias_) args.insert({DNNL_ARG_BIAS, dnn_->bias});
      if (c.pad_bytes)
        args.insert({DNNL_ARG_SCRATCHPAD,
                     memory(memory::desc({memory::dim(c.pad_bytes)}, dt::u8, tag::a), cpu_engine(), pad_p)});
      c.prim.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      status = Status(StatusCode::internal, std::string("oneDNN matmul failed: ") + e.what());
      return;
    }
    if (!dense)
      for (int r = 0; r < rows; ++r) std::memcpy(yr + r * ldy, yd + size_t(r) * N_, N_ * sizeof(float));
  });
  return status;
}

bool Projection::can_slice(int M) const {
  if (!small_ || M < 1) return false;
  if (widen_ && M >= widen_->min_rows()) return false;
  if (dnn_ && !dnn_->classes.empty() && M >= dnn_->classes.front().rows) return false;
  if (offsets_ && !offsets_->can_slice(M)) return false;
  return small_->impl->max_rows == 0 || M <= small_->impl->max_rows;
}

int Projection::slice_rows() const {
  // Offset blocks: slices start where both the weights' and the offsets' may (powers of two).
  return offsets_ ? std::max(stored_slice_rows(), offsets_->slice_rows()) : stored_slice_rows();
}

int Projection::stored_slice_rows() const {
  if (packed_.repacked) return 2 * small_->impl->repack_rows;  // two panels: Q8_0, Q4_0, Q4_K and Q5_K pair their 8-row panels
  if (packed_.type == kernels::WeightType::f32 && packed_.NB == 0) return 16;  // plain: a line of a row
  return packed_.NB > 1 ? packed_.NB : 1;
}

size_t Projection::slice_scratch_bytes(int M) const {
  const size_t stored = small_ ? round64(small_->impl->scratch_bytes(packed_, M)) : 0;
  return perm_bytes(M) + (offsets_ ? stored + offsets_slice_scratch_bytes(M) : stored);
}

// The weights of output rows [n0, n1) as a packing of their own: every layout keeps an
// output block (a repacked panel, an f32 block of NB columns, a stored row) contiguous.
void Projection::run_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                           void* scratch) const {
  if (in_perm_.empty()) return run_slice_in_order(x, ldx, y, ldy, M, n0, n1, scratch);
  // Each slice gathers its own copy (a decode step's K floats; the slices run on
  // different threads and share nothing).
  const float* xp = gather(x, ldx, M, 1, scratch);
  run_slice_in_order(xp, K_, y, ldy, M, n0, n1, static_cast<char*>(scratch) + perm_bytes(M));
}

bool Projection::prepares_slices() const {
  return small_ && in_perm_.empty() && !offsets_ && small_->impl->prepare && small_->impl->run_prepared;
}

bool Projection::same_slice_input(const Projection& o) const {
  return prepares_slices() && o.prepares_slices() && small_->impl == o.small_->impl && K_ == o.K_ &&
         packed_.Kp == o.packed_.Kp;
}

void Projection::prepare_slices(const float* x, int64_t ldx, int M, void* scratch) const {
  small_->impl->prepare(packed_, x, ldx, M, scratch);
}

void Projection::run_prepared_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                                    void* scratch) const {
  small_->impl->run_prepared(slice_weights(n0, n1), bias_ ? bias_ + n0 : nullptr, x, ldx, y + n0, ldy, M, 1,
                             scratch);
}

kernels::PackedWeights Projection::slice_weights(int n0, int n1) const {
  kernels::PackedWeights w = packed_;
  const auto* base = static_cast<const uint8_t*>(packed_.data);
  if (packed_.repacked) {
    const int64_t g = small_->impl->repack_rows, groups = (N_ + g - 1) / g;
    w.data = base + size_t(n0 / g) * (small_->impl->repacked_bytes(packed_) / size_t(groups));
  } else if (packed_.type == kernels::WeightType::f32 && packed_.NB == 0) {
    w.data = base + size_t(n0) * sizeof(float);  // plain: the columns from n0, ld kept
  } else if (packed_.NB > 1) {
    w.data = base + size_t(n0 / packed_.NB) * packed_.Kp * packed_.NB * sizeof(float);
  } else {
    w.data = base + size_t(n0) * packed_.row_bytes;
  }
  w.N = n1 - n0;
  return w;
}

void Projection::run_slice_in_order(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                                    void* scratch) const {
  small_->impl->run(slice_weights(n0, n1), bias_ ? bias_ + n0 : nullptr, x, ldx, y + n0, ldy, M, 1, scratch);
  if (offsets_)
    add_offsets_slice(x, ldx, y, ldy, M, n0, n1,
                      static_cast<char*>(scratch) + round64(small_->impl->scratch_bytes(packed_, M)));
}

std::string Projection::small_kernel() const {
  if (!small_) return "";
  return std::string(small_->impl->name) + ":" + kernels::isa_name(small_->isa);
}

std::string Projection::implementation(int M) const {
  const std::string stored = stored_implementation(M);
  return offsets_ ? stored + " + offsets " + offsets_->implementation(M) : stored;
}

std::string Projection::stored_implementation(int M) const {
  if (widen_ && M >= widen_->min_rows()) {
    const int rest = M - Widened16::rows_taken(M);
    return widen_->implementation(M) + (rest ? " + " + small_kernel() + "×" + std::to_string(rest) : "");
  }
  std::string out;
  int last = -2, count = 0, rows_each = 0;
  auto flush = [&] {
    if (count == 0) return;
    if (!out.empty()) out += " + ";
    out += (last < 0 ? small_kernel() : "oneDNN:" + dnn_->classes[last].impl) + "×" +
           std::to_string(rows_each) + (count > 1 ? "×" + std::to_string(count) : "");
  };
  split_rows(M, true, [&](int cls, int, int rows) {
    if (cls == last && rows == rows_each) {
      ++count;
      return;
    }
    flush();
    last = cls;
    rows_each = rows;
    count = 1;
  });
  flush();
  return out;
}

}  // namespace headwise::graph
