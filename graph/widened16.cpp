#include "graph/widened16.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/onednn_context.hpp"
#include "kernels/convert/kv_convert.hpp"

namespace headwise::graph {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the session brings scratch
  return attr;
}

// Output columns per chunk: K·cols·4 bytes of widened weights ≤ 1 MiB (in L2 while the
// inputs pass). Measured (2 threads, 512 rows, K 768 and 2048): 128 columns 193-242
// GFLOP/s, 256 no faster; K above 2048 takes 64 to keep the bound.
int chunk_cols(int K, int N) { return std::min(N, K <= 2048 ? 128 : 64); }

}  // namespace

// One chunk width (the full one, and the last chunk's when N is not a multiple).
struct ChunkPrims {
  int cols = 0;
  std::vector<dnnl::matmul> prims;  // one per row class
  std::vector<size_t> pads;
  std::string impl;
};

struct Widened16::Impl {
  const uint16_t* w = nullptr;
  bool f16 = false;  // else bf16
  const kernels::KvConvert* widen = nullptr;
  int K = 0, N = 0;
  std::vector<float> bias;
  ChunkPrims full, tail;  // tail.cols == 0: N is a multiple of full.cols
  std::vector<int> classes;
  size_t pad = 0;         // the largest scratchpad of any primitive

  // The widened chunk: [cols][K] fp32 rows, i.e. the K×cols matrix with strides (1, K).
  memory::desc chunk_desc(int cols) const { return memory::desc({K, cols}, dt::f32, memory::dims{1, K}); }

  Status make(ChunkPrims& c, int cols) {
    c.cols = cols;
    const dnnl::primitive_attr attr = user_scratchpad();
    for (int rows : classes) {
      const memory::desc src({rows, K}, dt::f32, tag::ab), dst({rows, cols}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, chunk_desc(cols), dst), attr, cpu_engine());
      const std::string impl = pd.impl_info_str();
      if (impl.find("ref") != std::string::npos) return Status(StatusCode::unsupported, impl);
      if (c.prims.empty()) c.impl = impl;
      c.prims.emplace_back(pd);
      c.pads.push_back(pd.scratchpad_desc().get_size());
      pad = std::max(pad, c.pads.back());
    }
    return Status::Ok();
  }

  size_t wchunk_bytes() const { return round64(size_t(K) * full.cols * sizeof(float)); }
  // Largest class ≤ rows (rows ≥ kMinRows).
  int largest_class(int rows) const {
    int c = 0;
    while (c + 1 < int(classes.size()) && classes[c + 1] <= rows) ++c;
    return c;
  }

  // M dense rows of x (a multiple of kMinRows): every chunk widened once, then each
  // class-sized piece of the rows multiplied by it.
  void pass(const float* x, int M, float* y, int64_t ldy, int threads, char* pad_p, void* wbuf, float* dbuf,
            dnnl::stream& stream) const {
    const memory scratch(memory::desc({memory::dim(std::max<size_t>(pad, 1))}, dt::u8, tag::a), cpu_engine(), pad_p);
    for (int n0 = 0; n0 < N; n0 += full.cols) {
      const ChunkPrims& c = n0 + full.cols <= N ? full : tail;
      auto* wf = static_cast<float*>(wbuf);
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int j = 0; j < c.cols; ++j) {
        const uint16_t* src = w + size_t(n0 + j) * K;
        if (f16) widen->f16_to_f32(src, wf + size_t(j) * K, K);
        else widen->bf16_to_f32(src, wf + size_t(j) * K, K);
      }
      memory wm(chunk_desc(c.cols), cpu_engine(), wbuf);
      for (int r0 = 0; r0 < M;) {
        const int k = largest_class(M - r0), rows = classes[k];
        memory xs(memory::desc({rows, K}, dt::f32, tag::ab), cpu_engine(), const_cast<float*>(x + size_t(r0) * K));
        memory ys(memory::desc({rows, c.cols}, dt::f32, tag::ab), cpu_engine(), dbuf);
        std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ys}};
        if (c.pads[k]) args.insert({DNNL_ARG_SCRATCHPAD, scratch});
        c.prims[k].execute(stream, args);
        stream.wait();
        // the chunk's columns into y (and the bias): oneDNN 2.6 runs a strided dst on gemm:jit, slower
        const float* b = bias.empty() ? nullptr : bias.data() + n0;
        const int cols = c.cols;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * cols >= 8192)
        for (int r = 0; r < rows; ++r) {
          float* yr = y + size_t(r0 + r) * ldy + n0;
          const float* dr = dbuf + size_t(r) * cols;
          if (b)
            for (int j = 0; j < cols; ++j) yr[j] = dr[j] + b[j];
          else
            std::memcpy(yr, dr, size_t(cols) * sizeof(float));
        }
        r0 += rows;
      }
    }
  }
};

Widened16::Widened16(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Widened16::~Widened16() = default;

Status Widened16::create(kernels::WeightType type, const uint16_t* w, int K, int N, const float* bias,
                         kernels::Isa isa, std::unique_ptr<Widened16>* out) {
  out->reset();
  if (type != kernels::WeightType::bf16 && type != kernels::WeightType::f16)
    return Status(StatusCode::invalid_argument, std::string("widened weights are bf16 or f16, not ") +
                                                    kernels::weight_type_name(type));
  auto d = std::make_unique<Impl>();
  d->w = w;
  d->f16 = type == kernels::WeightType::f16;
  d->widen = &kernels::kv_convert(isa);
  d->K = K;
  d->N = N;
  if (bias) d->bias.assign(bias, bias + N);
  for (int rows = kMinRows; rows <= kMaxRows; rows *= 2) d->classes.push_back(rows);
  try {
    const int cols = chunk_cols(K, N);
    if (!d->make(d->full, cols).ok()) return Status::Ok();
    if (N % cols && !d->make(d->tail, N % cols).ok()) return Status::Ok();
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, std::string("oneDNN could not prepare the widened ") +
                                            kernels::weight_type_name(type) + " " + std::to_string(K) + "x" +
                                            std::to_string(N) + " matmul: " + e.what());
  }
  out->reset(new Widened16(std::move(d)));
  return Status::Ok();
}

// oneDNN scratchpad | widened chunk | the chunk's output rows | staging for strided x
size_t Widened16::scratch_bytes(int rows) const {
  const Impl& d = *impl_;
  if (rows < kMinRows) return 0;
  const int most = d.classes[d.largest_class(rows)];
  return round64(d.pad) + d.wchunk_bytes() + round64(size_t(most) * d.full.cols * sizeof(float)) +
         round64(size_t(kMinRows) * d.K * sizeof(float));
}

Status Widened16::run(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                      void* scratch) const {
  const Impl& d = *impl_;
  M = rows_taken(M);
  if (M <= 0) return Status::Ok();
  const int most = d.classes[d.largest_class(M)];
  char* pad_p = static_cast<char*>(scratch);
  void* wbuf = pad_p + round64(d.pad);
  auto* dbuf = reinterpret_cast<float*>(static_cast<char*>(wbuf) + d.wchunk_bytes());
  auto* xs = reinterpret_cast<float*>(reinterpret_cast<char*>(dbuf) + round64(size_t(most) * d.full.cols * sizeof(float)));
  try {
    ScopedOmpThreads omp_threads(threads);
    thread_local dnnl::stream stream(cpu_engine());
    if (ldx == d.K) {
      d.pass(x, M, y, ldy, threads, pad_p, wbuf, dbuf, stream);
    } else {  // the primitives are made for dense rows: staged kMinRows at a time
      for (int r0 = 0; r0 < M; r0 += kMinRows) {
        for (int r = 0; r < kMinRows; ++r)
          std::memcpy(xs + size_t(r) * d.K, x + (r0 + r) * ldx, size_t(d.K) * sizeof(float));
        d.pass(xs, kMinRows, y + r0 * ldy, ldy, threads, pad_p, wbuf, dbuf, stream);
      }
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, std::string("oneDNN matmul on widened ") + (d.f16 ? "f16" : "bf16") +
                                            " weights failed: " + e.what());
  }
  return Status::Ok();
}

std::string Widened16::implementation(int M) const {
  const Impl& d = *impl_;
  M = rows_taken(M);
  std::string out;
  for (int r0 = 0, last = 0, count = 0; r0 <= M; ) {
    const int rows = r0 < M ? d.classes[d.largest_class(M - r0)] : 0;
    if (rows != last && count) {
      if (!out.empty()) out += " + ";
      out += "oneDNN:" + d.full.impl + " on " + (d.f16 ? "f16" : "bf16") + " widened per " +
             std::to_string(d.full.cols) + " columns×" + std::to_string(last) +
             (count > 1 ? "×" + std::to_string(count) : "");
      count = 0;
    }
    if (r0 == M) break;
    last = rows;
    ++count;
    r0 += rows;
  }
  return out;
}

}  // namespace headwise::graph
