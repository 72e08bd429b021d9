// Priority-queue BPE merges (runtime/tokenizer_merge.hpp).
#include "runtime/tokenizer_merge.hpp"

#include <queue>

namespace headwise::tok {
namespace {

struct ScoreCand {
  float score;
  int32_t left, right;
  uint32_t left_len, right_len;
  int32_t id;
};
struct ScoreOrder {  // a before b in the heap: b pops first when it scores higher or ties leftmost
  bool operator()(const ScoreCand& a, const ScoreCand& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct RankCand {
  int32_t rank;
  int32_t left, right;
  uint32_t left_len, right_len;
  int32_t id;
};
struct RankOrder {
  bool operator()(const RankCand& a, const RankCand& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

template <typename Cand>
bool still_valid(const std::vector<Symbol>& s, const Cand& c) {
  const Symbol& l = s[c.left];
  const Symbol& r = s[c.right];
  return l.len == c.left_len && r.len == c.right_len && l.next == c.right;
}

// Merges c.right into c.left and returns the merged symbol's index.
template <typename Cand>
int32_t apply(std::vector<Symbol>* s, const Cand& c) {
  Symbol& l = (*s)[c.left];
  Symbol& r = (*s)[c.right];
  l.len += r.len;
  l.id = c.id;
  l.next = r.next;
  if (r.next >= 0) (*s)[r.next].prev = c.left;
  r.len = 0;
  r.next = r.prev = -1;
  return c.left;
}

}  // namespace

void link_symbols(std::vector<Symbol>* symbols) {
  const int32_t n = int32_t(symbols->size());
  for (int32_t i = 0; i < n; ++i) {
    (*symbols)[i].prev = i - 1;
    (*symbols)[i].next = i + 1 < n ? i + 1 : -1;
  }
}

void merge_by_score(std::string_view text, const PieceIndex& index, const std::vector<float>& scores,
                    float min_score, std::vector<Symbol>* symbols) {
  std::vector<Symbol>& s = *symbols;
  if (s.size() < 2) return;
  std::priority_queue<ScoreCand, std::vector<ScoreCand>, ScoreOrder> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = s[left].next;
    if (right < 0) return;
    const auto it = index.find(text.substr(s[left].start, s[left].len + s[right].len));
    if (it == index.end()) return;
    const float score = scores[it->second];
    if (!(score > min_score)) return;  // NaN never merges either
    queue.push({score, left, right, s[left].len, s[right].len, it->second});
  };
  for (int32_t i = 0; i + 1 < int32_t(s.size()); ++i) consider(i);
  while (!queue.empty()) {
    const ScoreCand c = queue.top();
    queue.pop();
    if (!still_valid(s, c)) continue;
    const int32_t m = apply(&s, c);
    if (s[m].prev >= 0) consider(s[m].prev);
    consider(m);
  }
}

void merge_by_rank(const MergeTable& ranks, std::vector<Symbol>* symbols) {
  std::vector<Symbol>& s = *symbols;
  if (s.size() < 2) return;
  std::priority_queue<RankCand, std::vector<RankCand>, RankOrder> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = s[left].next;
    if (right < 0 || s[left].id < 0 || s[right].id < 0) return;
    const auto it = ranks.find(merge_key(s[left].id, s[right].id));
    if (it == ranks.end()) return;
    queue.push({it->second.first, left, right, s[left].len, s[right].len, it->second.second});
  };
  for (int32_t i = 0; i + 1 < int32_t(s.size()); ++i) consider(i);
  while (!queue.empty()) {
    const RankCand c = queue.top();
    queue.pop();
    if (!still_valid(s, c)) continue;
    const int32_t m = apply(&s, c);
    if (s[m].prev >= 0) consider(s[m].prev);
    consider(m);
  }
}

}  // namespace headwise::tok
