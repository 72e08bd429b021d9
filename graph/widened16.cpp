#include "graph/widened16.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/omp_rows.hpp"
#include "graph/onednn_context.hpp"
#include "kernels/convert/kv_convert.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/matmul/gemm_bf16_amx.hpp"

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

// Dequantized weights of up to this many bf16 bytes are dequantized whole, so a dense y
// is the matmul's dst (Impl::whole): 512 × 768 × 2048 Q8_0, 2 threads, 930-1100 GFLOP/s
// against 740-790 in 128-column chunks, whose copies into y took 12-15% of the time.
// 32 MiB: a 2048 × 8192 matrix (llama-1b-like's gate and up) in one.
constexpr size_t kWholeBytes = size_t(32) << 20;

// AMX panels (Impl::amx): the packed panels of one chunk fill at most this many bytes —
// the L2 of one core, each thread's share of them in its own (2 MiB a core on the Xeon
// this was measured on; K 2048: 16 panels, 512 columns).
constexpr size_t kAmxChunkBytes = size_t(2) << 20;

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
  // Dequantized (create_dequant): the registry kernel's repacked weights, dequantized
  // into bf16 rows per chunk; the inputs rounded to bf16 per pass.
  const kernels::LinearKernelImpl* dq = nullptr;
  // Dequantized onto AMX tiles instead of oneDNN (kernels::amx_usable() when made): per
  // chunk of amx_panels panels of 32 columns, each dequantized, packed and multiplied by
  // every input row of the pass (gemm_bf16_amx.hpp); inputs in rows amx_rows_ld(K) apart.
  bool amx = false;
  // F16 on the AMX panels: weights and inputs split into bf16 hi + lo, three products laid
  // along a K of 3K (gemm_bf16_amx.hpp, amx_split_*): KP, the depth the panels multiply.
  bool split = false;
  int64_t KP = 0;
  kernels::Isa isa = kernels::Isa::scalar;  // the plan's (AMX only on avx512)
  int amx_panels = 0;
  int64_t ldk = 0;  // elements between the bf16 rows of the inputs and the dequantized rows
  // BF16 rows as stored (create_bf16_rows): the matmul's weights in place, no chunk.
  bool in_place = false;
  bool bf16_src = false;  // dq or in_place: bf16 weights, inputs rounded to bf16
  kernels::PackedWeights pw;
  std::string type_name;  // what the chunks are made of, for messages
  int min_rows = kMinRows;
  int K = 0, N = 0;
  std::vector<float> bias;
  ChunkPrims full, tail;  // tail.cols == 0: N is a multiple of full.cols
  // Dequantized, when all N columns fit in kWholeBytes of bf16: one chunk of every
  // column, so a dense y is the matmul's own dst (no copy; see pass()).
  ChunkPrims whole;
  std::vector<int> classes;
  size_t pad = 0;         // the largest scratchpad of any primitive

  // The widened chunk: [cols][K] fp32 (bf16 when dequantized) rows, i.e. the K×cols
  // matrix with strides (1, K).
  dt elem() const { return bf16_src ? dt::bf16 : dt::f32; }
  memory::desc chunk_desc(int cols) const { return memory::desc({K, cols}, elem(), memory::dims{1, K}); }

  Status make(ChunkPrims& c, int cols) {
    c.cols = cols;
    const dnnl::primitive_attr attr = user_scratchpad();
    for (int rows : classes) {
      const memory::desc src({rows, K}, elem(), tag::ab), dst({rows, cols}, dt::f32, tag::ab);
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

  // a chunk's rows: fp32 (widened) or bf16 (dequantized)
  size_t wchunk_bytes() const {
    if (amx)  // dequantized rows, then the packed panels
      return round64(size_t(amx_panels) * kernels::kAmxPanelCols * ldk * 2) +
             round64(size_t(amx_panels) * kernels::amx_panel_elems(KP) * 2);
    return in_place ? 0 : round64(size_t(K) * std::max(full.cols, whole.cols) * (bf16_src ? 2 : 4));
  }
  // Where chunk [n0, ...)'s weights are for the matmul: the stored rows, or wbuf filled.
  void* chunk_at(int n0, int cols, void* wbuf, int threads) const {
    if (in_place) return const_cast<uint16_t*>(w + size_t(n0) * K);
    fill_chunk(n0, cols, wbuf, threads);
    return wbuf;
  }
  // Elements between the bf16 input rows of a pass.
  int64_t xrow_elems() const { return amx ? ldk : K; }
  // Dequantized: input rows rounded to bf16 per pass of at most this many (a multiple
  // of kMinRows): ≤ 8 MiB of staging, whole classes of up to kMaxRows.
  int pass_rows() const {
    const int64_t fit = std::max<int64_t>(kMinRows, (int64_t(8) << 20) / (2 * xrow_elems()) / kMinRows * kMinRows);
    return int(std::min<int64_t>(kMaxRows, fit));
  }
  // Chunk columns [n0, n0 + cols) of the weights into wbuf as the matmul reads them.
  void fill_chunk(int n0, int cols, void* wbuf, int threads) const {
    if (dq) {  // a panel at a time (dequant_bf16 starts on one)
      auto* wb = static_cast<uint16_t*>(wbuf);
      const int step = dq->repack_rows, groups = (cols + step - 1) / step;
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int g = 0; g < groups; ++g) {
        const int j0 = g * step, j1 = std::min(cols, j0 + step);
        dq->dequant_bf16(pw, n0 + j0, n0 + j1, wb + size_t(j0) * K, K);
      }
      return;
    }
    auto* wf = static_cast<float*>(wbuf);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int j = 0; j < cols; ++j) {
      const uint16_t* src = w + size_t(n0 + j) * K;
      if (f16) widen->f16_to_f32(src, wf + size_t(j) * K, K);
      else widen->bf16_to_f32(src, wf + size_t(j) * K, K);
    }
  }
  // Largest class ≤ rows (rows ≥ kMinRows).
  int largest_class(int rows) const {
    int c = 0;
    while (c + 1 < int(classes.size()) && classes[c + 1] <= rows) ++c;
    return c;
  }

  // `rows` input rows (ldx apart) as the bf16 rows a pass multiplies (xrow_elems()
  // apart): rounded, or split for the F16 panels.
  void inputs_to_bf16(const float* x, int64_t ldx, int rows, uint16_t* xb, int threads) const {
    const int64_t ld = xrow_elems();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int r = 0; r < rows; ++r) {
      if (split)
        kernels::amx_split_input_row(x + r * ldx, K, xb + size_t(r) * ld);
      else
        widen->f32_to_bf16(x + r * ldx, xb + size_t(r) * ld, K);
    }
  }

  // Columns [n0, n1) (one panel's, n1 − n0 ≤ 32) as a packed panel, through `rows` (32
  // rows ldk apart) where they are not packed straight from the stored rows.
  void pack_panel(int n0, int n1, uint16_t* rows, uint16_t* panel) const {
    constexpr int C = kernels::kAmxPanelCols;
    if (in_place && n1 - n0 == C) {  // BF16 rows as stored: packed straight from them
      kernels::amx_pack_panel_bf16(w + size_t(n0) * K, K, K, panel);
      return;
    }
    if (dq && dq->dequant_amx) {  // dequantized straight into the tile layout
      dq->dequant_amx(pw, n0, n1, panel);
      return;
    }
    if (split)
      for (int j = 0; j < n1 - n0; ++j) kernels::amx_split_f16_weight_row(w + size_t(n0 + j) * K, K, rows + j * ldk);
    else if (in_place)
      for (int j = 0; j < n1 - n0; ++j) std::memcpy(rows + j * ldk, w + size_t(n0 + j) * K, size_t(K) * 2);
    else
      dq->dequant_bf16(pw, n0, n1, rows, ldk);
    for (int j = n1 - n0; j < C; ++j) std::memset(rows + j * ldk, 0, size_t(KP) * 2);
    kernels::amx_pack_panel_bf16(rows, ldk, KP, panel);
  }

  // AMX: M bf16 rows of xb (ldk apart, a multiple of kMinRows), chunk by chunk: the
  // chunk's panels split into contiguous ranges, one a thread (fewer panels than
  // threads: the rows split too); each range dequantized and packed by one thread, into
  // its core's L2, then its products run rows outer, panels inner (amx_gemm_panels_bf16).
  // With `up` (run_gated: the same shapes), each chunk holds half as many panels of each
  // matrix, the same columns of both, and y gets combine(gate, up) of them.
  //
  // Where each thread multiplies only the range it packed (a range a thread, all rows:
  // every chunk but possibly the last), nothing is shared and no thread waits: a thread
  // goes on to its next chunk's range while another finishes this one's, so the pass
  // ends after each thread's own work, not after the slowest of every chunk (waits at
  // the chunks' two barriers had been ~7% of a quantized projection's samples). A
  // barrier stands only before a chunk split otherwise, whose panels may be another
  // thread's of the chunk before.
  void amx_pass(const uint16_t* xb, int M, float* y, int64_t ldy, int threads, void* wbuf, const Impl* up = nullptr,
                kernels::AmxCombine combine = nullptr) const {
    constexpr int C = kernels::kAmxPanelCols;
    auto* rowbuf = static_cast<uint16_t*>(wbuf);
    auto* panels = reinterpret_cast<uint16_t*>(static_cast<char*>(wbuf) + round64(size_t(amx_panels) * C * ldk * 2));
    const int total = (N + C - 1) / C;
    int P = std::min(up ? amx_panels / 2 : amx_panels, total);
    if (P >= threads) P = P / threads * threads;  // equal ranges
    const int units = M / kMinRows;               // 16-row units
    const size_t pe = kernels::amx_panel_elems(KP);
    const float* gb = bias.empty() ? nullptr : bias.data();
    const float* ub = !up || up->bias.empty() ? nullptr : up->bias.data();
    // pack: panels [i0, i1) of the chunk at p0 into their places; multiply: rows
    // [u0, u1) (16-row units) by those panels, into y.
    auto pack = [&](int p0, int i0, int i1) {
      for (int i = i0; i < i1; ++i) {
        const int n0 = (p0 + i) * C, n1 = std::min(N, n0 + C);
        pack_panel(n0, n1, rowbuf + size_t(i) * C * ldk, panels + i * pe);
        if (up) up->pack_panel(n0, n1, rowbuf + size_t(P + i) * C * ldk, panels + (P + i) * pe);
      }
    };
    auto multiply = [&](int p0, int i0, int i1, int u0, int u1) {
      const int n0 = (p0 + i0) * C, cols = std::min(N, (p0 + i1) * C) - n0;
      const uint16_t* xr = xb + size_t(u0) * kMinRows * ldk;
      float* yr = y + int64_t(u0) * kMinRows * ldy + n0;
      if (up)
        kernels::amx_gemm_panels_gated_bf16(xr, ldk, (u1 - u0) * kMinRows, KP, panels + i0 * pe,
                                            panels + (P + i0) * pe, cols, gb ? gb + n0 : nullptr,
                                            ub ? ub + n0 : nullptr, combine, yr, ldy);
      else
        kernels::amx_gemm_panels_bf16(xr, ldk, (u1 - u0) * kMinRows, KP, panels + i0 * pe, cols,
                                      gb ? gb + n0 : nullptr, yr, ldy);
    };
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      int own_np = -1;  // the previous chunk's panel count where it was split one range a thread
      for (int p0 = 0; p0 < total; p0 += P) {
        const int np = std::min(P, total - p0);
        const int R = std::min(np, nt), G = std::max(1, std::min(units, nt / R));
        if (R == nt && G == 1) {  // every thread its own range
          if (own_np >= 0 && own_np != np) {
#pragma omp barrier
          }
          own_np = np;
          pack(p0, np * t / nt, np * (t + 1) / nt);
          multiply(p0, np * t / nt, np * (t + 1) / nt, 0, units);
          continue;
        }
        if (own_np >= 0) {
#pragma omp barrier
        }
        own_np = -2;  // (the loops below end in barriers)
#pragma omp for schedule(static)
        for (int r = 0; r < R; ++r) pack(p0, np * r / R, np * (r + 1) / R);
#pragma omp for schedule(static)
        for (int it = 0; it < R * G; ++it) {
          const int r = it / G, g = it % G;
          multiply(p0, np * r / R, np * (r + 1) / R, units * g / G, units * (g + 1) / G);
        }
      }
    }
  }

  // M dense rows of x (a multiple of kMinRows; fp32, or bf16 when dequantized): every
  // chunk widened once, then each class-sized piece of the rows multiplied by it.
  void pass(const void* x, int M, float* y, int64_t ldy, int threads, char* pad_p, void* wbuf, float* dbuf,
            dnnl::stream& stream) const {
    const memory scratch(memory::desc({memory::dim(std::max<size_t>(pad, 1))}, dt::u8, tag::a), cpu_engine(), pad_p);
    const size_t xrow = size_t(K) * (bf16_src ? 2 : 4);
    // A dense y and one chunk of all N columns: the matmul writes y itself, and a bias is
    // added in place. Else chunks, each's columns copied into y: a strided dst puts
    // oneDNN 2.6 on gemm:jit (AMX bf16, 512 x 768 x 128: 456 GFLOP/s against 1248).
    const ChunkPrims* all = whole.cols ? &whole : full.cols == N ? &full : nullptr;
    if (all && ldy == N) {
      memory wm(chunk_desc(N), cpu_engine(), chunk_at(0, N, wbuf, threads));
      for (int r0 = 0; r0 < M;) {
        const int k = largest_class(M - r0), rows = classes[k];
        memory xs(memory::desc({rows, K}, elem(), tag::ab), cpu_engine(),
                  const_cast<char*>(static_cast<const char*>(x) + size_t(r0) * xrow));
        memory ys(memory::desc({rows, N}, dt::f32, tag::ab), cpu_engine(), y + size_t(r0) * N);
        std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ys}};
        if (all->pads[k]) args.insert({DNNL_ARG_SCRATCHPAD, scratch});
        all->prims[k].execute(stream, args);
        stream.wait();
        if (!bias.empty()) {
#pragma omp parallel for num_threads(threads) schedule(static)
          for (int r = 0; r < rows; ++r) {
            float* yr = y + size_t(r0 + r) * N;
            for (int j = 0; j < N; ++j) yr[j] += bias[j];
          }
        }
        r0 += rows;
      }
      return;
    }
    for (int n0 = 0; n0 < N; n0 += full.cols) {
      const ChunkPrims& c = n0 + full.cols <= N ? full : tail;
      memory wm(chunk_desc(c.cols), cpu_engine(), chunk_at(n0, c.cols, wbuf, threads));
      for (int r0 = 0; r0 < M;) {
        const int k = largest_class(M - r0), rows = classes[k];
        memory xs(memory::desc({rows, K}, elem(), tag::ab), cpu_engine(),
                  const_cast<char*>(static_cast<const char*>(x) + size_t(r0) * xrow));
        memory ys(memory::desc({rows, c.cols}, dt::f32, tag::ab), cpu_engine(), dbuf);
        std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ys}};
        if (c.pads[k]) args.insert({DNNL_ARG_SCRATCHPAD, scratch});
        c.prims[k].execute(stream, args);
        stream.wait();
        // the chunk's columns into y (and the bias): oneDNN 2.6 runs a strided dst on gemm:jit, slower
        const float* b = bias.empty() ? nullptr : bias.data() + n0;
        const int cols = c.cols;
        for_rows(rows, threads, rows * cols >= 8192, [&](int r) {
          float* yr = y + size_t(r0 + r) * ldy + n0;
          const float* dr = dbuf + size_t(r) * cols;
          if (b)
            for (int j = 0; j < cols; ++j) yr[j] = dr[j] + b[j];
          else
            std::memcpy(yr, dr, size_t(cols) * sizeof(float));
        });
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
  d->isa = isa;
  d->widen = &kernels::kv_convert(isa);
  d->type_name = kernels::weight_type_name(type);
  d->K = K;
  d->N = N;
  if (bias) d->bias.assign(bias, bias + N);
  return finish(std::move(d), out);
}

Status Widened16::create_dequant(const kernels::LinearKernelImpl& k, const kernels::PackedWeights& w,
                                 const float* bias, int min_rows, kernels::Isa isa,
                                 std::unique_ptr<Widened16>* out) {
  out->reset();
  if (!k.dequant_bf16 || !w.repacked)
    return Status(StatusCode::invalid_argument, std::string("dequantized weights need a kernel's repacked ") +
                                                    kernels::weight_type_name(w.type) + " panels and its dequant_bf16");
  auto d = std::make_unique<Impl>();
  d->dq = &k;
  d->bf16_src = true;
  d->isa = isa;
  d->pw = w;
  d->widen = &kernels::kv_convert(isa);
  d->type_name = kernels::weight_type_name(w.type);
  d->min_rows = std::max(kMinRows, min_rows / kMinRows * kMinRows);
  d->K = w.K;
  d->N = w.N;
  if (bias) d->bias.assign(bias, bias + w.N);
  return finish(std::move(d), out);
}

Status Widened16::create_bf16_rows(const uint16_t* w, int K, int N, const float* bias, kernels::Isa isa,
                                   std::unique_ptr<Widened16>* out) {
  out->reset();
  auto d = std::make_unique<Impl>();
  d->w = w;
  d->in_place = d->bf16_src = true;
  d->isa = isa;
  d->widen = &kernels::kv_convert(isa);
  d->type_name = "bf16";
  d->K = K;
  d->N = N;
  if (bias) d->bias.assign(bias, bias + N);
  return finish(std::move(d), out);
}

Status Widened16::finish(std::unique_ptr<Impl> d, std::unique_ptr<Widened16>* out) {
  for (int rows = kMinRows; rows <= kMaxRows; rows *= 2) d->classes.push_back(rows);
  // bf16 weights (dequantized or as stored) on the AMX panels where they can run: no
  // oneDNN primitive then
  if ((d->bf16_src || d->f16) && d->isa == kernels::Isa::avx512 && kernels::amx_usable() &&
      d->K % kernels::kAmxK == 0) {
    d->amx = true;
    d->split = d->f16;
    d->KP = d->split ? 3 * int64_t(d->K) : d->K;
    d->ldk = kernels::amx_rows_ld(d->KP);
    d->amx_panels = int(std::max<size_t>(1, kAmxChunkBytes / (kernels::amx_panel_elems(d->KP) * 2)));
    out->reset(new Widened16(std::move(d)));
    return Status::Ok();
  }
  try {
    const int cols = chunk_cols(d->K, d->N);
    if (!d->make(d->full, cols).ok()) return Status::Ok();
    if (d->bf16_src && d->N > cols && (d->in_place || size_t(d->K) * d->N * 2 <= kWholeBytes) &&
        !d->make(d->whole, d->N).ok())
      return Status::Ok();
    if (d->N % cols && !d->make(d->tail, d->N % cols).ok()) return Status::Ok();
  } catch (const dnnl::error& e) {
    return Status(StatusCode::internal, "oneDNN could not prepare the " + std::string(d->dq ? "dequantized " : d->in_place ? "" : "widened ") +
                                            d->type_name + " " + std::to_string(d->K) + "x" + std::to_string(d->N) +
                                            " matmul: " + e.what());
  }
  out->reset(new Widened16(std::move(d)));
  return Status::Ok();
}

int Widened16::min_rows() const { return impl_->min_rows; }

// oneDNN scratchpad | widened chunk | the chunk's output rows | staging for strided x
// (dequantized: the inputs of a pass rounded to bf16)
size_t Widened16::scratch_bytes(int rows) const {
  const Impl& d = *impl_;
  if (rows < d.min_rows) return 0;
  const int most = d.classes[d.largest_class(rows)];
  const size_t staging = d.bf16_src || d.amx ? size_t(std::min(rows_taken(rows), d.pass_rows())) * d.xrow_elems() * sizeof(uint16_t)
                              : size_t(kMinRows) * d.K * sizeof(float);
  return round64(d.pad) + d.wchunk_bytes() + round64(size_t(most) * d.full.cols * sizeof(float)) + round64(staging);
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
    if (d.bf16_src || d.amx) {  // passes of rows rounded to bf16, or split (every chunk dequantized once a pass)
      auto* xb = reinterpret_cast<uint16_t*>(xs);
      for (int r0 = 0; r0 < M; r0 += d.pass_rows()) {
        const int rows = std::min(M - r0, d.pass_rows());
        d.inputs_to_bf16(x + r0 * ldx, ldx, rows, xb, threads);
        if (d.amx)
          d.amx_pass(xb, rows, y + r0 * ldy, ldy, threads, wbuf);
        else
          d.pass(xb, rows, y + r0 * ldy, ldy, threads, pad_p, wbuf, dbuf, stream);
      }
    } else if (ldx == d.K) {
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
    return Status(StatusCode::internal, std::string("oneDNN matmul on ") + (d.dq ? "dequantized " : d.in_place ? "" : "widened ") +
                                            d.type_name + " weights failed: " + e.what());
  }
  return Status::Ok();
}

bool Widened16::can_gate(const Widened16& up) const {
  const Impl &g = *impl_, &u = *up.impl_;
  return g.amx && u.amx && g.amx_panels >= 2 && g.K == u.K && g.N == u.N && g.KP == u.KP && g.ldk == u.ldk &&
         g.split == u.split && g.amx_panels == u.amx_panels;
}

Status Widened16::run_gated(const Widened16& up, kernels::AmxCombine combine, const float* x, int64_t ldx, float* y,
                            int64_t ldy, int M, int threads, void* scratch) const {
  const Impl& d = *impl_;
  if (!can_gate(up))
    return Status(StatusCode::invalid_argument, "a gated pair needs two " + d.type_name + " projections of one shape on AMX panels");
  M = rows_taken(M);
  void* wbuf = static_cast<char*>(scratch) + round64(d.pad);
  const int most = d.classes[d.largest_class(M)];  // the staging where run() has it (scratch_bytes)
  auto* xb = reinterpret_cast<uint16_t*>(static_cast<char*>(wbuf) + d.wchunk_bytes() +
                                         round64(size_t(most) * d.full.cols * sizeof(float)));
  ScopedOmpThreads omp_threads(threads);
  for (int r0 = 0; r0 < M; r0 += d.pass_rows()) {
    const int rows = std::min(M - r0, d.pass_rows());
    d.inputs_to_bf16(x + r0 * ldx, ldx, rows, xb, threads);
    d.amx_pass(xb, rows, y + r0 * ldy, ldy, threads, wbuf, up.impl_.get(), combine);
  }
  return Status::Ok();
}

std::string Widened16::implementation(int M) const {
  const Impl& d = *impl_;
  M = rows_taken(M);
  if (d.amx)
    return "AMX bf16 tiles on " + d.type_name +
           (d.split ? " split into bf16 hi + lo (3 products)" : d.in_place ? " as stored" : " dequantized to bf16") +
           " per 32-column panel (" +
           std::to_string(d.amx_panels) + " a chunk)×" + std::to_string(M);
  std::string out;
  for (int r0 = 0, last = 0, count = 0; r0 <= M; ) {
    const int rows = r0 < M ? d.classes[d.largest_class(M - r0)] : 0;
    if (rows != last && count) {
      if (!out.empty()) out += " + ";
      const std::string per = d.whole.cols ? "all " + std::to_string(d.N) + " columns (" +
                                                 std::to_string(d.full.cols) + " into a strided y)"
                                           : std::to_string(d.full.cols) + " columns";
      out += "oneDNN:" + d.full.impl + " on " + d.type_name + (d.dq ? " dequantized to bf16" : d.in_place ? " as stored" : " widened") + " per " +
             per + "×" + std::to_string(last) + (count > 1 ? "×" + std::to_string(count) : "");
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
