#include "graph/projection.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include <oneapi/dnnl/dnnl.hpp>

namespace headwise::graph {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The row count the weight layout is chosen for. oneDNN 2.6 picks the same blocked
// layout for M = 1 and M = 1024 on the shapes we use, so one reorder serves every row
// class (implementation() shows what a given M runs).
constexpr int kLayoutRows = 256;

// Primitives are made for dense rows (ldx = K, ldy = N): the plan's memory plan keeps
// activations dense, and oneDNN 2.6 runs strided matmuls on its reference path.
dnnl::matmul::primitive_desc make_pd(int M, int K, int N, const memory::desc& wmd, bool bias) {
  const memory::desc src({M, K}, dt::f32, tag::ab);
  const memory::desc dst({M, N}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the session brings scratch
  if (bias) {
    const memory::desc bmd({1, N}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, bmd, dst), attr, cpu_engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wmd, dst), attr, cpu_engine());
}

// Recognises oneDNN's [N/NB][K/KB][KB][NB] layout (PackedWeights, f32) from its descriptor.
kernels::PackedWeights describe_blocked(const memory::desc& md, const float* data, int K, int N) {
  kernels::PackedWeights b;
  b.K = K;
  b.N = N;
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 2 || d.offset0 != 0) return b;
  const dnnl_blocking_desc_t& blk = d.format_desc.blocking;
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

// Sets the calling thread's OpenMP max-threads for oneDNN and restores it on exit, so
// callers never see their setting changed.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : saved_(omp_get_max_threads()) {
    if (n != saved_) omp_set_num_threads(n);
  }
  ~ScopedOmpThreads() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }

 private:
  int saved_;
};

}  // namespace

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
};

Projection::~Projection() = default;

Status Projection::create_f32(const float* w, int K, int N, int64_t stride_k, int64_t stride_n,
                              const float* bias, kernels::Isa isa, std::unique_ptr<Projection>* out) {
  auto p = std::unique_ptr<Projection>(new Projection);
  p->K_ = K;
  p->N_ = N;
  p->dnn_ = std::make_unique<Onednn>();
  Onednn& d = *p->dnn_;
  try {
    const memory::desc any({K, N}, dt::f32, tag::any);
    d.wmd = make_pd(kLayoutRows, K, N, any, bias != nullptr).weights_desc();
    // Reorder from the caller's strided layout into the blocked one.
    const memory::desc given({K, N}, dt::f32, memory::dims{stride_k, stride_n});
    memory src(given, cpu_engine(), const_cast<float*>(w));
    d.weights = memory(d.wmd, cpu_engine());
    dnnl::stream s(cpu_engine());
    dnnl::reorder(src, d.weights).execute(s, src, d.weights);
    if (bias) {
      d.bias = memory(memory::desc({1, N}, dt::f32, tag::ab), cpu_engine());
      std::copy(bias, bias + N, static_cast<float*>(d.bias.get_data_handle()));
      p->bias_ = static_cast<const float*>(d.bias.get_data_handle());
    }
    s.wait();
    p->weight_bytes_ = d.wmd.get_size();
    p->packed_ = describe_blocked(d.wmd, static_cast<const float*>(d.weights.get_data_handle()), K, N);
    p->small_ = kernels::linear_kernel(p->packed_, isa);
    // Without a small-row kernel for this layout, oneDNN takes every row count.
    for (int rows = p->small_ ? kMinClassRows : 1; rows <= kMaxClassRows; rows *= 2) {
      Onednn::Class c;
      c.rows = rows;
      auto pd = make_pd(rows, K, N, d.wmd, bias != nullptr);
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
                                std::unique_ptr<Projection>* out) {
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
  *out = std::move(p);
  return Status::Ok();
}

template <class F>
void Projection::split_rows(int M, F&& f) const {
  const int small_max = small_ ? small_->impl->max_rows : 0;
  for (int r = 0; r < M;) {
    const int rem = M - r;
    int take;
    if (dnn_ && !dnn_->classes.empty() && rem >= dnn_->classes.front().rows) {
      int c = 0;  // the largest class that fits
      while (c + 1 < int(dnn_->classes.size()) && dnn_->classes[c + 1].rows <= rem) ++c;
      take = dnn_->classes[c].rows;
      f(c, r, take);
    } else {
      take = small_max > 0 ? std::min(rem, small_max) : rem;
      f(-1, r, take);
    }
    r += take;
  }
}

size_t Projection::scratch_bytes(int rows) const {
  size_t pad = 0, staging = 0, small = 0;
  if (dnn_)
    for (const Onednn::Class& c : dnn_->classes)
      if (c.rows <= rows) {
        pad = std::max(pad, c.pad_bytes);
        staging = size_t(c.rows) * (K_ + N_) * sizeof(float);
      }
  if (small_) {
    const int mr = small_->impl->max_rows;
    small = small_->impl->scratch_bytes(packed_, mr > 0 ? std::min(rows, mr) : rows);
  }
  return round64(pad) + round64(staging) + round64(small);
}

Status Projection::run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                       void* scratch) const {
  if (M <= 0) return Status::Ok();
  // The same layout as scratch_bytes(M): oneDNN scratchpad | dense staging | small kernel.
  size_t pad = 0, staging = 0;
  if (dnn_)
    for (const Onednn::Class& c : dnn_->classes)
      if (c.rows <= M) {
        pad = std::max(pad, c.pad_bytes);
        staging = size_t(c.rows) * (K_ + N_) * sizeof(float);
      }
  char* base = static_cast<char*>(scratch);
  char* pad_p = base;
  float* stage = reinterpret_cast<float*>(base + round64(pad));
  void* small_scratch = base + round64(pad) + round64(staging);
  Status status;
  split_rows(M, [&](int cls, int r0, int rows) {
    if (!status.ok()) return;
    const float* xr = x + r0 * ldx;
    float* yr = y + r0 * ldy;
    if (cls < 0) {
      small_->impl->run(packed_, bias_, xr, ldx, yr, ldy, rows, threads, small_scratch);
      return;
    }
    const Onednn::Class& c = dnn_->classes[cls];
    const bool dense = ldx == K_ && ldy == N_;
    const float* xd = xr;
    float* yd = yr;
    if (!dense) {  // stage through dense rows (see make_pd)
      float* xs = stage;
      yd = stage + size_t(rows) * K_;
      for (int r = 0; r < rows; ++r) std::memcpy(xs + size_t(r) * K_, xr + r * ldx, K_ * sizeof(float));
      xd = xs;
    }
    try {
      ScopedOmpThreads omp_threads(threads);
      thread_local dnnl::stream stream(cpu_engine());
      memory xs(memory::desc({rows, K_}, dt::f32, tag::ab), cpu_engine(), const_cast<float*>(xd));
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

std::string Projection::small_kernel() const {
  if (!small_) return "";
  return std::string(small_->impl->name) + ":" + kernels::isa_name(small_->isa);
}

std::string Projection::implementation(int M) const {
  std::string out;
  int last = -2, count = 0, rows_each = 0;
  auto flush = [&] {
    if (count == 0) return;
    if (!out.empty()) out += " + ";
    out += (last < 0 ? small_kernel() : "oneDNN:" + dnn_->classes[last].impl) + "×" +
           std::to_string(rows_each) + (count > 1 ? "×" + std::to_string(count) : "");
  };
  split_rows(M, [&](int cls, int, int rows) {
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
