#include "headwise/analysis/head_roles.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "headwise/analysis/attention_maps.hpp"

namespace headwise {
namespace {

// Mean over rows i >= 1 of f(row i, i); 0 when there is no such row.
template <class F>
double mean_rows(const float* w, int T, F f) {
  if (T < 2) return 0;
  double sum = 0;
  for (int i = 1; i < T; ++i) sum += f(w + size_t(i) * T, i);
  return sum / (T - 1);
}

// splitmix64: a fixed stream, unlike std::uniform_int_distribution (whose mapping
// differs between standard libraries), so a seed names the same sequence everywhere.
uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool is_byte_piece(const std::string& p) {
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>';
}

}  // namespace

double previous_token_score(const float* w, int T) {
  return mean_rows(w, T, [](const float* row, int i) { return double(row[i - 1]); });
}

double sink_score(const float* w, int T) {
  return mean_rows(w, T, [](const float* row, int) { return double(row[0]); });
}

double local_score(const float* w, int T) {
  return mean_rows(w, T, [](const float* row, int i) {
    double s = 0;
    for (int j = std::max(0, i - kLocalWindow); j <= i; ++j) s += row[j];
    return s;
  });
}

double mean_entropy(const float* w, int T) {
  return mean_rows(w, T, [T](const float* row, int) {
    double h = 0;
    for (int j = 0; j < T; ++j)
      if (row[j] > 0) h -= double(row[j]) * std::log(double(row[j]));
    return h;
  });
}

double induction_score(const float* w, int T, int L) {
  if (L < 1 || T != 2 * L + 1) return NAN;
  double sum = 0;
  for (int j = 0; j < L; ++j) sum += w[size_t(1 + L + j) * T + (2 + j)];
  return sum / L;
}

std::string dominant_role(const HeadScores& s) {
  const struct {
    const char* name;
    double score;
  } c[] = {{"previous-token", s.prev_token},
           {"sink", s.sink},
           {"local", s.local - s.prev_token},
           {"induction", s.induction}};
  int best = 0;
  for (int i = 1; i < 4; ++i)
    if (c[i].score > c[best].score) best = i;
  if (!(c[best].score >= 0.5)) return "mixed";
  for (int i = 0; i < 4; ++i)
    if (i != best && c[best].score < 1.5 * c[i].score) return "mixed";
  return c[best].name;
}

Status induction_tokens(const Model& model, int L, uint64_t seed, std::vector<int32_t>* out) {
  if (!out) return invalid_argument("induction_tokens: out is a null pointer");
  if (L < 1) return invalid_argument("induction_tokens: length " + std::to_string(L) + " < 1");
  const Tokenizer* tok = model.tokenizer();
  std::vector<int32_t> pool;
  for (int32_t id = 3; id < model.info().vocab_size; ++id)
    if (!tok || id >= tok->vocab_size() || !is_byte_piece(tok->piece(id))) pool.push_back(id);
  if (int(pool.size()) < L)
    return invalid_argument("induction_tokens: " + std::to_string(L) +
                            " distinct tokens wanted, the vocabulary has " +
                            std::to_string(pool.size()) + " ordinary ones");
  // Partial Fisher–Yates: the first L entries become a random draw without repeats.
  uint64_t state = seed;
  for (int i = 0; i < L; ++i) {
    const size_t k = i + splitmix64(&state) % (pool.size() - i);
    std::swap(pool[i], pool[k]);
  }
  out->assign(1, Tokenizer::kBos);
  for (int rep = 0; rep < 2; ++rep) out->insert(out->end(), pool.begin(), pool.begin() + L);
  return Status::Ok();
}

Status head_roles(const Model& model, const std::vector<int32_t>& text, const RoleOptions& options,
                  RoleTable* out) {
  if (!out) return invalid_argument("head_roles: out is a null pointer");
  if (text.size() < 2) return invalid_argument("head_roles: the text needs at least 2 tokens");
  const ModelInfo& info = model.info();
  const int L = std::min(options.induction_length, (info.max_seq_len - 1) / 2);
  std::vector<int32_t> rep;
  HW_RETURN_IF_ERROR(induction_tokens(model, L, options.seed, &rep));
  MapsRequest req;
  req.threads = options.threads;
  AttentionMaps on_text, on_rep;
  HW_RETURN_IF_ERROR(attention_maps(model, text, req, &on_text));
  HW_RETURN_IF_ERROR(attention_maps(model, rep, req, &on_rep));

  RoleTable t;
  t.n_layers = info.n_layers;
  t.n_heads = info.n_heads;
  t.text_tokens = on_text.tokens;
  t.induction_length = L;
  for (int l = 0; l < info.n_layers; ++l)
    for (int h = 0; h < info.n_heads; ++h) {
      HeadRole r;
      r.layer = l;
      r.head = h;
      const float* w = on_text.map(l, h);
      const int T = on_text.tokens;
      r.scores.prev_token = previous_token_score(w, T);
      r.scores.sink = sink_score(w, T);
      r.scores.local = local_score(w, T);
      r.scores.entropy = mean_entropy(w, T);
      r.scores.induction = induction_score(on_rep.map(l, h), on_rep.tokens, L);
      r.role = dominant_role(r.scores);
      t.heads.push_back(r);
    }
  *out = std::move(t);
  return Status::Ok();
}

Status ablation_study(const Model& model, const std::vector<int32_t>& text, int threads, Ablation* out) {
  if (!out) return invalid_argument("ablation_study: out is a null pointer");
  const ModelInfo& info = model.info();
  Ablation a;
  HW_RETURN_IF_ERROR(next_token_loss(model, text, AttentionHook(), threads, &a.baseline_loss));
  a.head.assign(info.n_layers, std::vector<double>(info.n_heads));
  a.layer.assign(info.n_layers, 0);
  for (int l = 0; l < info.n_layers; ++l) {
    for (int h = -1; h < info.n_heads; ++h) {
      double loss = 0;
      HW_RETURN_IF_ERROR(ablated_loss(model, text, l, h, threads, &loss));
      (h < 0 ? a.layer[l] : a.head[l][h]) = loss - a.baseline_loss;
    }
  }
  *out = std::move(a);
  return Status::Ok();
}

}  // namespace headwise
