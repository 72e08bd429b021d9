// Reference multi-head attention, written to be obviously correct (llama2.c style):
// per (batch, query head, query) materialise every score in float64, take the full
// softmax, weight V. Every fast path is tested against this; it is never optimised.
// 16-bit K/V are widened exactly (half.hpp), so the reference sees the same rounded
// values the kernels do: the only difference left is the order of summation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention/attention.hpp"
#include "kernels/simd/half.hpp"

namespace headwise::kernels {

namespace {

template <class E>
void reference(const AttnProblem& p) {
  using T = typename E::T;
  const int D = p.head_dim;
  std::vector<double> score(static_cast<size_t>(p.kv_len));  // (Tk,) one query's scores
  std::vector<double> out(static_cast<size_t>(D));            // (D,)
  for (int b = 0; b < p.batch; ++b) {
    const int valid = p.kv_valid ? p.kv_valid[b] : p.kv_len;
    for (int hq = 0; hq < p.q_heads; ++hq) {
      const int hk = hq / p.group();  // GQA: query head hq reads kv head hq / group
      for (int i = 0; i < p.q_len; ++i) {
        const float* q = p.q.at(b, i, hq);
        // keys this query may see: j < valid, and j ≤ its position when causal
        int last = valid - 1;
        if (p.causal) last = std::min(last, p.causal_offset() + i);
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j <= last; ++j) {
          const T* k = p.k.at<T>(b, j, hk);
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += static_cast<double>(q[d]) * widen(E(), k[d]);
          score[j] = s * p.scale;
          mx = std::max(mx, score[j]);
        }
        double sum = 0.0;
        for (int j = 0; j <= last; ++j) {
          score[j] = std::exp(score[j] - mx);
          sum += score[j];
        }
        std::fill(out.begin(), out.end(), 0.0);
        for (int j = 0; j <= last; ++j) {
          const T* v = p.v.at<T>(b, j, hk);
          const double w = score[j] / sum;
          for (int d = 0; d < D; ++d) out[d] += w * widen(E(), v[d]);
        }
        // A query with no visible key (last < 0) gets zeros, not 0/0.
        float* o = p.o.at(b, i, hq);
        for (int d = 0; d < D; ++d) o[d] = static_cast<float>(out[d]);
      }
    }
  }
}

}  // namespace

void attention_reference(const AttnProblem& p) {
  switch (p.kv_type) {
    case KvType::f32: return reference<KvF32>(p);
    case KvType::f16: return reference<KvF16>(p);
    case KvType::bf16: return reference<KvBf16>(p);
  }
}

}  // namespace headwise::kernels
