#include "kernels/matmul/linear.hpp"

#include <omp.h>

#include <algorithm>

#include <oneapi/dnnl/dnnl.hpp>

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
};

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
  try {
    return primitive(M, K_, N_)->impl;
  } catch (const dnnl::error& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace headwise::kernels
