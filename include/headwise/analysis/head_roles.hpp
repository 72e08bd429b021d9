// What each attention head does, in numbers: scores computed from a head's weight
// matrix W (T×T, row i = query position i, rows sum to 1, causal), a dominant role
// when one score clearly stands out, and how much the next-token loss rises when the
// head (or its whole layer) is zeroed.
//
// Conventions (rows are query positions; position 0 normally holds BOS):
//   previous-token  mean over rows i >= 1 of W[i][i−1]
//   sink            mean over rows i >= 1 of W[i][0]. Row 0 is left out: under the
//                   causal mask it can only attend to itself, so it says nothing.
//                   At row 1 position 0 is also the previous token; both count it.
//   local           mean over rows i >= 1 of Σ W[i][j] for j = max(0, i−3) .. i: the
//                   query itself and the 3 positions before it (i itself counts:
//                   attending to the current token is local behaviour too). It
//                   contains the previous-token weight.
//   entropy         mean over rows i >= 1 of −Σ_j W[i][j]·ln W[i][j] (nats, 0·ln 0 = 0);
//                   row 0 is left out (always 0).
//   induction       on tokens [BOS, r_0..r_{L−1}, r_0..r_{L−1}] (T = 2L+1, the r_j
//                   distinct): r_j sits at 1+j in the first copy and at 1+L+j in the
//                   second. For j = 0..L−1, the weight of query 1+L+j on position 2+j
//                   (the token after r_j's earlier occurrence), averaged over j.
//   role            candidates: previous-token (prev), sink (sink), induction
//                   (induction) and local (local − prev: the window beyond the
//                   previous token, so a pure previous-token head is not also
//                   "local"). The largest candidate is the role when it is >= 0.5
//                   and >= 1.5× every other candidate; otherwise "mixed".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headwise/model.hpp"

namespace headwise {

constexpr int kLocalWindow = 3;  // positions back that count as local

double previous_token_score(const float* w, int T);
double sink_score(const float* w, int T);
double local_score(const float* w, int T);
double mean_entropy(const float* w, int T);
// `w` is the map of the induction sequence above: T must be 2L+1 (else NaN).
double induction_score(const float* w, int T, int L);

struct HeadScores {
  double prev_token = 0, sink = 0, local = 0, entropy = 0, induction = 0;
};
std::string dominant_role(const HeadScores& s);

// [BOS, r, r] with L distinct random ids r drawn (seeded, the same on every platform)
// from the ordinary pieces: ids >= 3 that are not byte-fallback "<0xHH>" pieces.
// Errors when L < 1 or there are fewer than L such ids.
Status induction_tokens(const Model& model, int L, uint64_t seed, std::vector<int32_t>* out);

struct HeadRole {
  int layer = 0, head = 0;
  HeadScores scores;
  std::string role;
};

struct RoleOptions {
  int threads = 0;
  uint64_t seed = 1;          // for the induction sequence
  int induction_length = 32;  // L; capped so that 2L+1 fits the context
};

struct RoleTable {
  int n_layers = 0, n_heads = 0;
  int text_tokens = 0, induction_length = 0;
  std::vector<HeadRole> heads;  // layer-major: heads[layer·n_heads + head]
};

// Scores every head: prev/sink/local/entropy on `text` (token ids, BOS first as
// encode() gives them), induction on induction_tokens(L, seed).
Status head_roles(const Model& model, const std::vector<int32_t>& text, const RoleOptions& options,
                  RoleTable* out);

// Loss increase on `text` when a head, or a whole layer, is zeroed before W_o
// (ablated_loss − baseline, nats per token).
struct Ablation {
  double baseline_loss = 0;
  std::vector<std::vector<double>> head;  // [layer][head]
  std::vector<double> layer;              // [layer]
};
Status ablation_study(const Model& model, const std::vector<int32_t>& text, int threads, Ablation* out);

}  // namespace headwise
