#include "runtime/executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "graph/omp_rows.hpp"
#include "graph/team.hpp"
#include "graph/weights.hpp"
#include "kernels/convert/kv_convert.hpp"
#include "kernels/elementwise/elementwise.hpp"

namespace headwise {
namespace {

using graph::Group;
using graph::Node;
using graph::OpKind;
using kernels::RowsIn;
using kernels::RowsOut;

struct View {
  float* p;
  int64_t stride;
  RowsIn in() const { return {p, stride}; }
  RowsOut out() const { return {p, stride}; }
};

class Run {
 public:
  Run(const graph::Plan& plan, const Step& s)
      : plan_(plan),
        g_(plan.graph),
        s_(s),
        ew_(*plan.elementwise),
        kv_(*plan.kv_convert),
        threads_(graph::resolve_threads(s.threads)) {}

  // Where a value lives in this step. A value bound to a KV-cache slot lives in the
  // session's fp32 cache (at this step's positions) when the step has one sequence; with
  // several, or with a 16-bit cache, it is computed (and rotated) in fp32 in the arena,
  // and attention rounds it into each cache.
  View at(int v) const {
    if (v == g_.logits) return {s_.logits, g_.settings.vocab_size};
    const Group& grp = g_.groups[g_.values[v].group];
    if (grp.kv_slot >= 0 && s_.seqs.size() == 1 && s_.seqs[0].buf->kv_type == KvType::f32) {
      const StepSeq& q = s_.seqs[0];
      const SessionBuffers::KvView kv = q.buf->kv_view(plan_, grp.kv_slot);  // fp32: position-major
      float* base = reinterpret_cast<float*>(grp.kv_part ? kv.v : kv.k) + kv.offset(q.pos0, 0);
      return {base, kv.layout.st};
    }
    return {s_.arena + grp.offset * s_.M, grp.cols};
  }

  // Floats a step's row conversions (the K/V rows into a 16-bit cache — as many again
  // for V — or a stored-type embedding's rows) write from which they are split over the
  // threads: 4-12 µs of work at 0.5-1.5 ns a float, against an OpenMP region's ~3 µs.
  static constexpr int64_t kMinSplitFloats = 4096;

  Status node(int i) {
    const Node& n = g_.nodes[i];
    const int M = s_.M, th = threads_;
    switch (n.op) {
      case OpKind::embedding: {
        if (n.w) {
          kernels::embedding(n.w, static_cast<int>(n.w_cols), s_.tokens, at(n.out[0]).out(), M, th);
          return Status::Ok();
        }
        // A table in its stored type (f16, bf16, a block type): the looked-up rows
        // converted as graph::to_f32 converts them everywhere else.
        // A prompt's rows are split over the threads (the conversions are scalar: ~6 ms a
        // 512-row prompt of llama-1b-like's q6_k table on one thread).
        const View y = at(n.out[0]);
        const size_t rb = graph::dtype_row_bytes(n.wq_type, n.w_cols);
        const bool split = th > 1 && int64_t(M) * n.w_cols >= kMinSplitFloats;
        graph::for_rows(M, th, split, [&](int r) {
          graph::to_f32(n.wq_type, static_cast<const uint8_t*>(n.wq) + size_t(s_.tokens[r]) * rb, size_t(n.w_cols),
                        y.p + size_t(r) * y.stride);
        });
        return Status::Ok();
      }
      case OpKind::pos_embedding: {
        // x(r) += W(pos(r)): a gather into the output, then a residual add
        const View x = at(n.in[0]), y = at(n.out[0]);
        const int C = g_.values[n.out[0]].cols;
        for (int r = 0; r < M; ++r) {
          const float* w = n.w + size_t(s_.pos[r]) * n.w_cols;
          kernels::add(ew_, {x.p + r * x.stride, 0}, {w, 0}, {y.p + r * y.stride, 0}, 1, C, 1);
        }
        return Status::Ok();
      }
      case OpKind::rmsnorm:
        kernels::rmsnorm(ew_, at(n.in[0]).in(), n.w, n.eps, at(n.out[0]).out(), M,
                         g_.values[n.out[0]].cols, th);
        return Status::Ok();
      case OpKind::head_rmsnorm: {
        // Each head's slice is a row of its own: rows × heads rows of head_dim.
        const View x = at(n.in[0]), y = at(n.out[0]);
        const int C = g_.values[n.out[0]].cols;
        if (x.stride == C && y.stride == C)
          kernels::rmsnorm(ew_, {x.p, n.head_dim}, n.w, n.eps, {y.p, n.head_dim}, M * n.heads, n.head_dim, th);
        else
          for (int r = 0; r < M; ++r)
            kernels::rmsnorm(ew_, {x.p + r * x.stride, n.head_dim}, n.w, n.eps, {y.p + r * y.stride, n.head_dim},
                             n.heads, n.head_dim, th);
        return Status::Ok();
      }
      case OpKind::layernorm:
        kernels::layernorm(ew_, at(n.in[0]).in(), n.w, n.b, n.eps, at(n.out[0]).out(), M,
                           g_.values[n.out[0]].cols, th);
        return Status::Ok();
      case OpKind::linear: {
        const View x = at(n.in[0]);
        for (size_t j = 0; j < n.out.size(); ++j) {
          const View y = at(n.out[j]);
          HW_RETURN_IF_ERROR(plan_.linears[i][j]->run(x.p, x.stride, y.p, y.stride, M, th, s_.scratch));
        }
        return Status::Ok();
      }
      case OpKind::rope: {
        const View x = at(n.in[0]), y = at(n.out[0]);
        if (x.p != y.p) copy_rows(x, y, g_.values[n.out[0]].cols);
        kernels::rope(ew_, y.out(), M, n.heads, n.head_dim, s_.pos, plan_.rope_cos.data(),
                      plan_.rope_sin.data(), g_.settings.rope_style, th);
        return Status::Ok();
      }
      case OpKind::attention:
        return attention(n);
      case OpKind::add:
        kernels::add(ew_, at(n.in[0]).in(), at(n.in[1]).in(), at(n.out[0]).out(), M,
                     g_.values[n.out[0]].cols, th);
        return Status::Ok();
      case OpKind::mul:
        kernels::mul(ew_, at(n.in[0]).in(), at(n.in[1]).in(), at(n.out[0]).out(), M,
                     g_.values[n.out[0]].cols, th);
        return Status::Ok();
      case OpKind::silu:
      case OpKind::gelu: {
        const View x = at(n.in[0]), y = at(n.out[0]);
        const int C = g_.values[n.out[0]].cols;
        if (x.p != y.p) copy_rows(x, y, C);
        if (n.op == OpKind::silu) kernels::silu(ew_, y.out(), M, C, th);
        else if (n.gelu_tanh) kernels::gelu_tanh(ew_, y.out(), M, C, th);
        else kernels::gelu_erf(ew_, y.out(), M, C, th);
        return Status::Ok();
      }
      case OpKind::swiglu:
        kernels::swiglu(ew_, at(n.in[0]).in(), at(n.in[1]).in(), at(n.out[0]).out(), M,
                        g_.values[n.out[0]].cols, th);
        return Status::Ok();
      case OpKind::logits: {
        // Only the rows whose logits are wanted: every row, or the last row of each
        // sequence (one per sequence in a batched decode, where every sequence has one).
        const View x = at(n.in[0]);
        const int nseq = static_cast<int>(s_.seqs.size());
        if (s_.all_logits || nseq == M) return classify(i, x.p, x.stride, M);
        if (nseq == 1) return classify(i, x.p + (M - 1) * x.stride, x.stride, 1);  // the last row
        return last_rows_logits(i, n, x);
      }
      case OpKind::Count:
        break;
    }
    return Status(StatusCode::internal, n.where + ": unknown op");
  }

  // Linear nodes [i, i + run) read one input (Plan::linear_run): in a step of few rows
  // on several threads their projections, or a lone linear node's, run in one parallel
  // region (run_projections), the shares balanced per node (Step::balance). 0: node i
  // is not a linear node run that way.
  int group_size(int i) const {
    if (g_.nodes[i].op != OpKind::linear || plan_.linear_run.empty()) return 0;
    return s_.M <= graph::Plan::kGroupMaxRows && threads_ > 1 ? plan_.linear_run[i] : 0;
  }
  // Nodes i, i + 1, i + 2 a SwiGLU FFN (Plan::gated): the rows of this step their
  // projections compute as one gated product, else 0.
  int gated_rows(int i) const {
    if (plan_.gated.empty() || !plan_.gated[i]) return 0;
    return plan_.linears[i][0]->gated_rows(*plan_.linears[i + 1][0], s_.M);
  }
  // The swiglu's output for the step: `rows` rows as one gated product, any rest as the
  // three nodes run them (gate and up into their values, then the swiglu).
  Status gated_ffn(int i, int rows) {
    const Node &gate = g_.nodes[i], &up = g_.nodes[i + 1], &sw = g_.nodes[i + 2];
    const graph::Projection &pg = *plan_.linears[i][0], &pu = *plan_.linears[i + 1][0];
    const View x = at(gate.in[0]), f = at(sw.out[0]);
    HW_RETURN_IF_ERROR(pg.run_gated(pu, kernels::swiglu_rows(ew_), x.p, x.stride, f.p, f.stride, rows, threads_,
                                    s_.scratch));
    const int rest = s_.M - rows;
    if (rest == 0) return Status::Ok();
    const View g = at(gate.out[0]), u = at(up.out[0]);
    const float* xr = x.p + rows * x.stride;
    HW_RETURN_IF_ERROR(pg.run(xr, x.stride, g.p + rows * g.stride, g.stride, rest, threads_, s_.scratch));
    HW_RETURN_IF_ERROR(pu.run(xr, x.stride, u.p + rows * u.stride, u.stride, rest, threads_, s_.scratch));
    kernels::swiglu(ew_, {g.p + rows * g.stride, g.stride}, {u.p + rows * u.stride, u.stride},
                    {f.p + rows * f.stride, f.stride}, rest, g_.values[sw.out[0]].cols, threads_);
    return Status::Ok();
  }
  graph::ShareBalance* balance(int i) const { return s_.balance ? s_.balance + i : nullptr; }

  Status linear_group(int i, int run) {
    constexpr int kRoom = 16;
    const graph::Projection* ps[kRoom];
    float* ys[kRoom];
    int64_t ldys[kRoom];
    const int n = plan_.linear_group(i, ps, kRoom);
    if (n == 0) {  // more projections than kRoom: one node after the other
      for (int j = i; j < i + run; ++j) HW_RETURN_IF_ERROR(node(j));
      return Status::Ok();
    }
    int k = 0;
    for (int j = i; j < i + run; ++j)
      for (size_t o = 0; o < g_.nodes[j].out.size(); ++o, ++k) {
        const View y = at(g_.nodes[j].out[o]);
        ys[k] = y.p;
        ldys[k] = y.stride;
      }
    const View x = at(g_.nodes[i].in[0]);
    return graph::run_projections(ps, n, x.p, x.stride, ys, ldys, s_.M, threads_, s_.scratch, s_.scratch_bytes,
                                  balance(i));
  }

  // Logits of `rows` rows (rows ldx apart) into the step's logits: few rows as shares
  // balanced like a linear node's (run_projections; also what keeps a decode step off
  // OpenMP's threads, graph/team.hpp), more as one product.
  Status classify(int i, const float* x, int64_t ldx, int rows) const {
    const graph::Projection* p = plan_.linears[i][0].get();
    float* y = s_.logits;
    const int64_t ldy = g_.settings.vocab_size;
    if (rows <= graph::Plan::kGroupMaxRows)
      return graph::run_projections(&p, 1, x, ldx, &y, &ldy, rows, threads_, s_.scratch, s_.scratch_bytes,
                                    balance(i));
    return p->run(x, ldx, y, ldy, rows, threads_, s_.scratch);
  }

  // Several sequences of which some have more than one row (prompt chunks batched with
  // decode steps): logits for the last row of each, one row per sequence in order, in
  // one GEMM. The last rows are first moved up to rows 0..nseq-1 of the input, in place:
  // the graph ends with this node (graph.cpp checks it), so nothing reads the input
  // after it; and sequence q's last row is at or below row q and above every later
  // sequence's rows, so no row is overwritten before it is moved.
  Status last_rows_logits(int i, const Node& n, const View& x) const {
    const int nseq = static_cast<int>(s_.seqs.size());
    const int cols = g_.values[n.in[0]].cols;
    for (int q = 0; q < nseq; ++q) {
      const int last = s_.seqs[q].row0 + s_.seqs[q].rows - 1;
      if (last != q) std::memmove(x.p + q * x.stride, x.p + last * x.stride, cols * sizeof(float));
    }
    return classify(i, x.p, x.stride, nseq);
  }

  Status run() {
    const bool prof = s_.timings != nullptr;
    using Clock = std::chrono::steady_clock;
    const auto t_step = Clock::now();
    for (int i = 0; i < static_cast<int>(g_.nodes.size()); ++i) {
      const auto t0 = prof ? Clock::now() : Clock::time_point();
      const int grouped = group_size(i), gated = grouped ? 0 : gated_rows(i);
      const int run = grouped ? grouped : gated ? 3 : 1;
      HW_RETURN_IF_ERROR(grouped ? linear_group(i, grouped) : gated ? gated_ffn(i, gated) : node(i));
      if (prof) {
        // A group's time goes to its nodes in proportion to their weight bytes.
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        double bytes = 0, start = std::chrono::duration<double, std::micro>(t0 - t_step).count();
        for (int j = i; j < i + run; ++j) bytes += weight_bytes(j);
        for (int j = i; j < i + run; ++j) {
          const double part = run == 1 || bytes <= 0 ? secs : secs * weight_bytes(j) / bytes;
          OpTiming& t = (*s_.timings)[j];
          t.calls += 1;
          t.seconds += part;
          add_work(j, &t);
          if (s_.trace) s_.trace->push_back({j, start, part * 1e6, s_.M});
          start += part * 1e6;
        }
      }
      i += run - 1;
    }
    return Status::Ok();
  }

 private:
  // For an op whose output does not share its input's buffer (the input is read later).
  void copy_rows(const View& x, const View& y, int cols) const {
    for (int r = 0; r < s_.M; ++r)
      std::memcpy(y.p + r * y.stride, x.p + r * x.stride, cols * sizeof(float));
  }

  Status attention(const Node& n) {
    const int nseq = static_cast<int>(s_.seqs.size());
    const bool hook = s_.hook && *s_.hook;
    // Several sequences (batched decode): one sequence per thread, each on its own
    // cache, rather than every sequence split over all threads — one parallel run
    // per node instead of one per sequence, and no merge of split keys for short ones.
    // Sequences with several rows (prompt chunks in a mixed step) come first, each over
    // all threads.
    if (nseq > 1 && !hook && threads_ > 1) {
      std::vector<int> single;
      for (int i = 0; i < nseq; ++i)
        if (s_.seqs[i].rows > 1) HW_RETURN_IF_ERROR(sequence_attention(n, s_.seqs[i], threads_));
        else single.push_back(i);
      const int ns = static_cast<int>(single.size());
      const int nt = std::max(1, std::min(ns, threads_));
      // On the step's team (graph/team.hpp), each thread taking the next sequence.
      std::atomic<int> next{0};
      std::vector<Status> failed(nt);
      graph::parallel_run(nt, [&](int t, int) {
        for (int j; (j = next.fetch_add(1, std::memory_order_relaxed)) < ns;) {
          const Status st = sequence_attention(n, s_.seqs[single[j]], 1);
          if (!st.ok() && failed[t].ok()) failed[t] = st;
        }
      });
      for (const Status& st : failed)
        if (!st.ok()) return st;
      return Status::Ok();
    }
    for (const StepSeq& sq : s_.seqs) HW_RETURN_IF_ERROR(sequence_attention(n, sq, threads_));
    return Status::Ok();
  }

  Status sequence_attention(const Node& n, const StepSeq& sq, int threads) const {
    const View q = at(n.in[0]), k = at(n.in[1]), v = at(n.in[2]), o = at(n.out[0]);
    const int kvw = plan_.kv_width(), D = n.head_dim;
    const KvType kt = sq.buf->kv_type;
    const size_t eb = kv_type_bytes(kt);
    const SessionBuffers::KvView kv = sq.buf->kv_view(plan_, n.kv_slot);
    if (s_.seqs.size() > 1 || kt != KvType::f32) {
      // Batched step or 16-bit cache: this sequence's new K/V rows go from the arena to
      // its cache (copied, or rounded to nearest even), head by head where it is tiled.
      // A prompt's rows are split over the threads: on one, llama-134m's 512 rows took
      // 0.35-1.2 ms a layer, half its attention op's time; on two, 0.19 ms (f16 cache,
      // 2-core Xeon VM). Few rows (decode, a batched step's sequences) stay on the caller.
      const int pieces = kv.layout.stile ? n.kv_heads : 1, len = kv.layout.stile ? D : kvw;
      const bool split = threads > 1 && int64_t(sq.rows) * kvw >= kMinSplitFloats;
      graph::for_rows(sq.rows, threads, split, [&](int r) {
        for (int h = 0; h < pieces; ++h) {
          const size_t off = size_t(kv.offset(sq.pos0 + r, h)) * eb;
          kernels::store_kv(kv_, kt, k.p + (sq.row0 + r) * k.stride + h * D, kv.k + off, len);
          kernels::store_kv(kv_, kt, v.p + (sq.row0 + r) * v.stride + h * D, kv.v + off, len);
        }
      });
    }
    // The graph checked the shapes when it was built; the plan chose the kernel.
    kernels::AttnProblem p;
    p.q = {q.p + sq.row0 * q.stride, 0, q.stride, n.head_dim};
    p.k = kv.k_strided();
    p.v = kv.v_strided();
    p.o = {o.p + sq.row0 * o.stride, 0, o.stride, n.head_dim};
    p.q_len = sq.rows;
    p.kv_len = sq.pos0 + sq.rows;
    p.q_heads = n.heads;
    p.kv_heads = n.kv_heads;
    p.head_dim = n.head_dim;
    p.causal = n.causal;
    p.scale = n.scale > 0 ? n.scale : 1.0f / std::sqrt(float(n.head_dim));
    p.kv_type = kt;
    const kernels::AttnKernel& kern = plan_.attn_for(kt);
    const kernels::AttnPlan ap = kernels::plan_attention(kern, p, threads);
    float* ws = sq.buf->attention_workspace(ap.workspace_floats());
    if (!ws)
      return Status(StatusCode::internal, n.where + ": out of memory for the attention workspace (" +
                                              std::to_string(ap.workspace_floats() * 4) + " bytes)");
    if (ap.path == kernels::AttnPath::decode && ap.threads > 1) {  // the step's own threads (graph/team.hpp)
      graph::parallel_run(ap.threads, [&](int t, int nt) { kernels::run_decode_tasks(kern, p, ap, ws, t, nt); });
      graph::parallel_run(ap.threads, [&](int t, int nt) { kernels::run_decode_merge(p, ap, ws, t, nt); });
    } else {
      kernels::run_attention(kern, p, ap, ws);
    }
    if (s_.hook && *s_.hook) {
      AttentionTap tap;
      tap.layer = n.layer;
      tap.rows = sq.rows;
      tap.pos0 = sq.pos0;
      tap.heads = n.heads;
      tap.kv_heads = n.kv_heads;
      tap.head_dim = n.head_dim;
      tap.causal = n.causal;
      tap.scale = p.scale;
      tap.q = p.q.data;
      tap.q_stride = q.stride;
      if (kt == KvType::f32) {
        tap.k = reinterpret_cast<const float*>(kv.k);
        tap.v = reinterpret_cast<const float*>(kv.v);
        tap.kv_stride = kv.layout.st;
      } else {  // analysis only: hand the hook the cache widened to fp32 (exact), rows dense
        thread_local std::vector<float> kw, vw;
        const size_t nel = size_t(p.kv_len) * kvw;
        kw.resize(nel);
        vw.resize(nel);
        for (int t = 0; t < p.kv_len; ++t)
          for (int h = 0; h < n.kv_heads; ++h) {
            const size_t off = size_t(kv.offset(t, h)) * eb, to = size_t(t) * kvw + size_t(h) * D;
            kernels::load_kv(kv_, kt, kv.k + off, kw.data() + to, D);
            kernels::load_kv(kv_, kt, kv.v + off, vw.data() + to, D);
          }
        tap.k = kw.data();
        tap.v = vw.data();
        tap.kv_stride = kvw;
      }
      tap.kv_len = p.kv_len;
      tap.out = p.o.data;
      tap.out_stride = o.stride;
      (*s_.hook)(tap);
    }
    return Status::Ok();
  }

  // Bytes of weights node i's projections read per step, in their stored type (4 per
  // weight for f32, a Q4_0 block of 32 weights 18), so "% of bandwidth" holds for every type.
  double weight_bytes(int i) const {
    double b = 0;
    for (const auto& p : plan_.linears[i]) b += double(p->weight_bytes());
    return b;
  }

  // Work estimates for the per-op table: flops and bytes that had to come from memory.
  void add_work(int i, OpTiming* t) const {
    const Node& n = g_.nodes[i];
    const double M = s_.M;
    switch (n.op) {
      case OpKind::linear:
        t->flops += 2.0 * M * n.K * n.N;
        t->bytes += weight_bytes(i);
        break;
      case OpKind::logits: {
        const double rows = s_.all_logits ? M : static_cast<double>(s_.seqs.size());
        t->flops += 2.0 * rows * n.K * n.N;
        t->bytes += weight_bytes(i);
        break;
      }
      case OpKind::attention:
        for (const StepSeq& sq : s_.seqs) {
          const double Tk = sq.pos0 + sq.rows;
          t->flops += kernels::attention_flops(1, n.heads, n.head_dim, sq.rows, sq.pos0 + sq.rows, n.causal);
          t->bytes += 2.0 * kv_type_bytes(sq.buf->kv_type) * Tk * n.kv_heads * n.head_dim;
        }
        break;
      default:
        break;
    }
  }

  const graph::Plan& plan_;
  const graph::Graph& g_;
  const Step& s_;
  const kernels::ElemKernels& ew_;  // the plan's tables (chosen at build)
  const kernels::KvConvert& kv_;
  const int threads_;  // resolved once for the step
};

}  // namespace

Status execute(const graph::Plan& plan, const Step& step) { return Run(plan, step).run(); }

void init_timings(const graph::Plan& plan, std::vector<OpTiming>* t) {
  t->assign(plan.graph.nodes.size(), OpTiming{});
  for (size_t i = 0; i < plan.graph.nodes.size(); ++i) {
    const Node& n = plan.graph.nodes[i];
    (*t)[i].node = static_cast<int>(i);
    (*t)[i].layer = n.layer;
    (*t)[i].op = graph::op_name(n.op);
    (*t)[i].where = n.where;
  }
}

}  // namespace headwise
