#include "kernels/matmul/linear.hpp"

#include <omp.h>

#include <algorithm>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/matmul/gemv.hpp"

namespace headwise::kernels {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The row count the weight layout is chosen for. oneDNN 2.6 picks the same blocked
// layout for M = 1 and M = 1024 on the shapes we use, so one reorder serves prefill and
// decode alike (see implementation() to check what a given M runs).
constexpr int kLayoutRows = 256;

dnnl::matmul::primitive_desc make_pd(int M, int K, int N, int64_t ldx, int64_t ldy,
                                     const memory::desc& wmd, bool bias) {
  const memory::desc src({M, K}, dt::f32, memory::dims{ldx, 1});
  const memory::desc dst({M, N}, dt::f32, memory::dims{ldy, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (bias) {
    const memory::desc bmd({1, N}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, bmd, dst), attr, cpu_engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, dst), attr, cpu_engine());
}

}  // namespace

char* LinearScratch::Buffer::get(size_t n) {
  if (n > size) {
    data.reset(new char[n]);
    size = n;
  }
  return data.get();
}

struct PackedLinear::Impl {
  memory::desc wmd;       // the blocked layout
  memory weights;         // reordered, owned by oneDNN
  memory bias;            // (1, N) or empty
  bool has_bias = false;
  BlockedWeights blocked;  // .w set when the layout is one the small-M GEMV reads
};

namespace {

// Recognises oneDNN's [N/NB][K/KB][KB][NB] layout (see gemv.hpp) from its descriptor.
BlockedWeights describe_blocked(const memory::desc& md, const float* data, int K, int N) {
  BlockedWeights b;
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 2 || d.offset0 != 0) return b;
  const dnnl_blocking_desc_t& blk = d.format_desc.blocking;
  if (blk.inner_nblks != 2 || blk.inner_idxs[0] != 0 || blk.inner_idxs[1] != 1) return b;
  const int KB = static_cast<int>(blk.inner_blks[0]), NB = static_cast<int>(blk.inner_blks[1]);
  const int64_t Kp = d.padded_dims[0], Np = d.padded_dims[1];
  if (Kp % KB || Np % NB || blk.strides[0] != int64_t(KB) * NB || blk.strides[1] != Kp * NB) return b;
  b.w = data;
  b.K = K;
  b.N = N;
  b.KB = KB;
  b.NB = NB;
  b.Kp = static_cast<int>(Kp);
  return b;
}

}  // namespace

struct PackedLinear::Prim {
  dnnl::matmul prim;
  size_t scratch_bytes = 0;
  std::string impl;
};

PackedLinear::~PackedLinear() = default;

Status PackedLinear::create(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                            const float* bias, std::unique_ptr<PackedLinear>* out) {
  try {
    auto pl = std::unique_ptr<PackedLinear>(new PackedLinear);
    pl->K_ = K;
    pl->N_ = N;
    pl->impl_ = std::make_unique<Impl>();
    Impl& im = *pl->impl_;
    const memory::desc any({K, N}, dt::f32, tag::any);
    im.wmd = make_pd(kLayoutRows, K, N, K, N, any, bias != nullptr).weights_desc();
    // Reorder from the caller's strided layout into the blocked one.
    const memory::desc given({K, N}, dt::f32, memory::dims{stride_k, stride_n});
    memory src(given, cpu_engine(), const_cast<float*>(w));
    im.weights = memory(im.wmd, cpu_engine());
    dnnl::stream s(cpu_engine());
    dnnl::reorder(src, im.weights).execute(s, src, im.weights);
    im.blocked = describe_blocked(im.wmd, static_cast<const float*>(im.weights.get_data_handle()), K, N);
    if (bias) {
      im.has_bias = true;
      im.bias = memory(memory::desc({1, N}, dt::f32, tag::ab), cpu_engine());
      std::copy(bias, bias + N, static_cast<float*>(im.bias.get_data_handle()));
    }
    s.wait();
    *out = std::move(pl);
    return Status::Ok();
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, std::string("oneDNN could not pack a ") + std::to_string(K) +
                                            "x" + std::to_string(N) + " weight: " + e.what());
  }
}

const PackedLinear::Prim* PackedLinear::primitive(int M, int64_t ldx, int64_t ldy) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(M, ldx, ldy);
  auto it = prims_.find(key);
  if (it != prims_.end()) return it->second.get();
  auto pd = make_pd(M, K_, N_, ldx, ldy, impl_->wmd, impl_->has_bias);
  auto p = std::make_shared<Prim>();
  p->prim = dnnl::matmul(pd);
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->impl = pd.impl_info_str();
  return prims_.emplace(key, std::move(p)).first->second.get();
}

Status PackedLinear::run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                         LinearScratch* scratch) const {
  if (M <= 0) return Status::Ok();
  const BlockedWeights& bw = impl_->blocked;
  if (M <= kGemvMaxRows && bw.w) {
    if (GemvFn fn = gemv_kernel(active_isa(), bw.NB)) {
      if (bw.Kp != K_) {  // the GEMV reads Kp inputs per row: stage them zero padded
        float* xp = reinterpret_cast<float*>(scratch->staging.get(size_t(M) * bw.Kp * sizeof(float)));
        for (int r = 0; r < M; ++r) {
          std::copy(x + r * ldx, x + r * ldx + K_, xp + size_t(r) * bw.Kp);
          std::fill(xp + size_t(r) * bw.Kp + K_, xp + size_t(r + 1) * bw.Kp, 0.0f);
        }
        x = xp;
        ldx = bw.Kp;
      }
      const float* bias = impl_->has_bias ? static_cast<const float*>(impl_->bias.get_data_handle()) : nullptr;
      const int blocks = (N_ + bw.NB - 1) / bw.NB;
      int nt = threads > 0 ? threads : omp_get_max_threads();
      if (omp_in_parallel()) nt = 1;
      nt = std::max(1, std::min(nt, blocks));
      // Contiguous runs of output blocks per thread: each streams its own part of W.
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        const int b0 = int(int64_t(blocks) * t / n), b1 = int(int64_t(blocks) * (t + 1) / n);
        if (b0 < b1) fn(bw, bias, x, ldx, y, ldy, M, b0 * bw.NB, std::min(N_, b1 * bw.NB));
      }
      return Status::Ok();
    }
  }
  if (M > 1 && (ldx != K_ || ldy != N_)) {
    // oneDNN 2.6 runs strided (non-dense) matmuls on its reference path, hundreds of
    // times slower: stage through dense rows instead (the plan avoids this case; this
    // keeps any other caller correct and fast).
    float* xd = reinterpret_cast<float*>(scratch->staging.get(size_t(M) * (K_ + N_) * sizeof(float)));
    float* yd = xd + size_t(M) * K_;
    for (int r = 0; r < M; ++r) std::copy(x + r * ldx, x + r * ldx + K_, xd + size_t(r) * K_);
    HW_RETURN_IF_ERROR(run(xd, K_, yd, N_, M, threads, scratch));
    for (int r = 0; r < M; ++r) std::copy(yd + size_t(r) * N_, yd + size_t(r + 1) * N_, y + r * ldy);
    return Status::Ok();
  }
  try {
    const Prim* p = primitive(M, ldx, ldy);
    // oneDNN's OpenMP runtime uses the calling thread's max-threads setting.
    omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
    thread_local dnnl::stream stream(cpu_engine());
    const memory::desc src({M, K_}, dt::f32, memory::dims{ldx, 1});
    const memory::desc dst({M, N_}, dt::f32, memory::dims{ldy, 1});
    memory xs(src, cpu_engine(), const_cast<float*>(x));
    memory ys(dst, cpu_engine(), y);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, impl_->weights}, {DNNL_ARG_DST, ys}};
    if (impl_->has_bias) args.insert({DNNL_ARG_BIAS, impl_->bias});
    if (p->scratch_bytes) {
      memory sp(memory::desc({static_cast<memory::dim>(p->scratch_bytes)}, dt::u8, tag::a),
                cpu_engine(), scratch->pad.get(p->scratch_bytes));
      args.insert({DNNL_ARG_SCRATCHPAD, sp});
    }
    p->prim.execute(stream, args);
    stream.wait();
    return Status::Ok();
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, std::string("oneDNN matmul failed: ") + e.what());
  }
}

size_t PackedLinear::weight_bytes() const { return impl_->wmd.get_size(); }

std::string PackedLinear::implementation(int M) const {
  if (M <= kGemvMaxRows && impl_->blocked.w && gemv_kernel(active_isa(), impl_->blocked.NB))
    return "headwise:gemv_blocked_" + std::to_string(impl_->blocked.KB) + "x" +
           std::to_string(impl_->blocked.NB) + ":" + isa_name(active_isa());
  try {
    return primitive(M, K_, N_)->impl;
  } catch (const dnnl::error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace headwise::kernels
