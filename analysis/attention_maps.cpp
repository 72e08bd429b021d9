#include "headwise/analysis/attention_maps.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace headwise {
namespace {

Status check_tokens(const Model& model, const std::vector<int32_t>& tokens, int min_len) {
  const int T = static_cast<int>(tokens.size());
  if (T < min_len)
    return invalid_argument("need at least " + std::to_string(min_len) + " tokens, got " +
                            std::to_string(T));
  if (T > model.info().max_seq_len)
    return out_of_range(std::to_string(T) + " tokens exceed the context of " +
                        std::to_string(model.info().max_seq_len) + " positions");
  return Status::Ok();
}

// One softmax row: query position p of head h against keys 0..n-1 (n = p+1 when
// causal), written to row[0..T); keys past n stay exactly 0.
void softmax_row(const AttentionTap& tap, int r, int h, int n, std::vector<double>* s, float* row) {
  const int D = tap.head_dim;
  const int kvh = h / (tap.heads / tap.kv_heads);
  const float* q = tap.q + r * tap.q_stride + h * D;
  const double scale = tap.scale;
  double m = -INFINITY;
  for (int j = 0; j < n; ++j) {
    const float* k = tap.k + j * tap.kv_stride + kvh * D;
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += double(q[d]) * double(k[d]);
    (*s)[j] = dot * scale;
    m = std::max(m, (*s)[j]);
  }
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += ((*s)[j] = std::exp((*s)[j] - m));
  for (int j = 0; j < n; ++j) row[j] = float((*s)[j] / sum);
}

}  // namespace

Status attention_maps(const Model& model, const std::vector<int32_t>& tokens,
                      const MapsRequest& request, AttentionMaps* out) {
  if (!out) return invalid_argument("attention_maps: out is a null pointer");
  HW_RETURN_IF_ERROR(check_tokens(model, tokens, 1));
  const ModelInfo& info = model.info();
  std::vector<int> layers = request.layers, heads = request.heads;
  if (layers.empty())
    for (int l = 0; l < info.n_layers; ++l) layers.push_back(l);
  if (heads.empty())
    for (int h = 0; h < info.n_heads; ++h) heads.push_back(h);
  for (int l : layers)
    if (l < 0 || l >= info.n_layers)
      return out_of_range("attention_maps: layer " + std::to_string(l) + " (the model has " +
                          std::to_string(info.n_layers) + ")");
  for (int h : heads)
    if (h < 0 || h >= info.n_heads)
      return out_of_range("attention_maps: head " + std::to_string(h) + " (the model has " +
                          std::to_string(info.n_heads) + ")");

  const int T = static_cast<int>(tokens.size());
  AttentionMaps maps;
  maps.tokens = T;
  maps.w.assign(info.n_layers, std::vector<std::vector<float>>(info.n_heads));
  for (int l : layers)
    for (int h : heads) maps.w[l][h].assign(size_t(T) * T, 0.0f);

  const int threads = request.threads > 0 ? request.threads : omp_get_max_threads();
  SessionOptions so;
  so.threads = request.threads;
  so.attention_hook = [&maps, &heads, T, threads](const AttentionTap& tap) {
    if (tap.layer < 0 || tap.layer >= int(maps.w.size())) return;
    std::vector<std::vector<float>>& lw = maps.w[tap.layer];
    if (lw.empty() || lw[heads[0]].empty()) return;  // layer not requested
    const int H = static_cast<int>(heads.size());
    // Every (head, row) is independent: the result does not depend on the schedule.
#pragma omp parallel num_threads(threads)
    {
      std::vector<double> s(tap.kv_len);
#pragma omp for schedule(static)
      for (int x = 0; x < H * tap.rows; ++x) {
        const int h = heads[x / tap.rows], r = x % tap.rows, p = tap.pos0 + r;
        if (p >= T) continue;
        const int n = tap.causal ? std::min(p + 1, tap.kv_len) : tap.kv_len;
        softmax_row(tap, r, h, n, &s, lw[h].data() + size_t(p) * T);
      }
    }
  };
  std::unique_ptr<Session> session;
  HW_RETURN_IF_ERROR(model.open_session(so, &session));
  HW_RETURN_IF_ERROR(session->prefill(tokens));
  *out = std::move(maps);
  return Status::Ok();
}

Status next_token_loss(const Model& model, const std::vector<int32_t>& tokens,
                       const AttentionHook& hook, int threads, double* loss) {
  if (!loss) return invalid_argument("next_token_loss: loss is a null pointer");
  HW_RETURN_IF_ERROR(check_tokens(model, tokens, 2));
  SessionOptions so;
  so.threads = threads;
  so.all_logits = true;
  so.attention_hook = hook;
  std::unique_ptr<Session> session;
  HW_RETURN_IF_ERROR(model.open_session(so, &session));
  HW_RETURN_IF_ERROR(session->prefill(tokens));
  const int V = model.info().vocab_size, T = static_cast<int>(tokens.size());
  const std::vector<float>& logits = session->all_logits();
  if (logits.size() != size_t(T) * V)
    return Status(StatusCode::internal, "next_token_loss: expected the logits of every position");
  double total = 0;
  for (int i = 0; i + 1 < T; ++i) {
    const float* z = logits.data() + size_t(i) * V;
    const double m = *std::max_element(z, z + V);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(double(z[v]) - m);
    total += m + std::log(sum) - double(z[tokens[i + 1]]);
  }
  *loss = total / (T - 1);
  return Status::Ok();
}

AttentionHook zero_head_hook(int layer, int head) {
  return [layer, head](const AttentionTap& tap) {
    if (tap.layer != layer) return;
    const int D = tap.head_dim;
    const int c0 = head < 0 ? 0 : head * D, cols = head < 0 ? tap.heads * D : D;
    for (int r = 0; r < tap.rows; ++r) std::memset(tap.out + r * tap.out_stride + c0, 0, cols * sizeof(float));
  };
}

Status ablated_loss(const Model& model, const std::vector<int32_t>& tokens, int layer, int head,
                    int threads, double* loss) {
  const ModelInfo& info = model.info();
  if (layer < 0 || layer >= info.n_layers)
    return out_of_range("ablated_loss: layer " + std::to_string(layer) + " (the model has " +
                        std::to_string(info.n_layers) + ")");
  if (head < -1 || head >= info.n_heads)
    return out_of_range("ablated_loss: head " + std::to_string(head) + " (the model has " +
                        std::to_string(info.n_heads) + "; -1 = all)");
  return next_token_loss(model, tokens, zero_head_hook(layer, head), threads, loss);
}

}  // namespace headwise
