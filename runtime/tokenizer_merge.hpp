// The BPE merge loops, driven by a priority queue over adjacent pairs so that a word of
// n symbols takes O(n log n) instead of the O(n^2) of rescanning every pair after each
// merge. Symbols are spans of one text in a doubly linked list; a queued pair that a
// later merge made stale is recognised by its spans' lengths and skipped.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headwise::tok {

struct Symbol {
  int32_t id;      // the token id of the span, -1 when the span is no piece
  uint32_t start;  // the span text[start, start + len)
  uint32_t len;    // 0 once merged into its left neighbour
  int32_t prev, next;
};

using PieceIndex = std::unordered_map<std::string_view, int32_t>;

// SentencePiece: repeatedly merges the adjacent pair whose concatenated span is the
// piece of highest score (the leftmost on ties), while that score is > min_score.
// `text` holds the symbols' spans; ids come from `index`.
void merge_by_score(std::string_view text, const PieceIndex& index, const std::vector<float>& scores,
                    float min_score, std::vector<Symbol>* symbols);

// BPE: repeatedly merges the adjacent pair of ids with the lowest merge rank (leftmost
// on ties). `ranks` maps (left id << 32 | right id) to (rank, merged id).
using MergeTable = std::unordered_map<uint64_t, std::pair<int32_t, int32_t>>;
inline uint64_t merge_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
void merge_by_rank(const MergeTable& ranks, std::vector<Symbol>* symbols);

// Links symbols[0..n) as a list in order.
void link_symbols(std::vector<Symbol>* symbols);

}  // namespace headwise::tok
