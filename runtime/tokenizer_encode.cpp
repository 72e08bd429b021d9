// Encoding with every tokenizer but llama2.c's: added/special tokens are cut out of the
// text first, each remaining section is normalised, pre-tokenised into words, and each
// word BPE-merged (by score or by rank); BOS/EOS are added as configured. Also builds
// the lookup state from a configuration (build_state).
#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer_state.hpp"
#include "runtime/tokenizer_steps.hpp"
#include "runtime/tokenizer_utf8.hpp"

namespace headwise::tok {
namespace {


const std::string kMeta = "\xE2\x96\x81";  // ▁

std::string replace_metaspace(const std::string& p) {
  std::string out;
  out.reserve(p.size());
  for (size_t i = 0; i < p.size();) {
    if (p.compare(i, 3, kMeta) == 0) {
      out.push_back(' ');
      i += 3;
    } else {
      out.push_back(p[i++]);
    }
  }
  return out;
}

bool is_space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

struct Section {
  int32_t token;  // -1: text
  size_t b, e;
};

// Cuts the added tokens out of `text`, leftmost first, the longest at a position.
// Special ones only with parse_special.
std::vector<Section> split_added(const State& st, const std::string& text, bool parse_special) {
  std::vector<Section> out;
  const std::vector<AddedToken>& added = st.config.added;
  size_t text_start = 0;
  for (size_t i = 0; i < text.size();) {
    const auto& cands = st.added_by_first_byte[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (int32_t k : cands) {
      const AddedToken& a = added[k];
      if (a.special && !parse_special) continue;
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;  // longest first
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t b = text_start, e = i;
    if (hit->lstrip)
      while (e > b && is_space_byte(text[e - 1])) --e;
    if (e > b) out.push_back({-1, b, e});
    out.push_back({hit->id, i, i + hit->content.size()});
    i += hit->content.size();
    if (hit->rstrip)
      while (i < text.size() && is_space_byte(text[i])) ++i;
    text_start = i;
  }
  if (text_start < text.size()) out.push_back({-1, text_start, text.size()});
  return out;
}

class Encoder {
 public:
  Encoder(const State& st, std::vector<int32_t>* ids) : st_(st), c_(st.config), ids_(ids) {}

  void section(const std::string& raw, bool at_start) {
    bool needs_valid = !c_.raw_bytes || !c_.pre_tokenizers.empty();
    for (const NormalizerStep& n : c_.normalizers)
      if (n.kind != NormalizerStep::kPrepend && n.kind != NormalizerStep::kReplace) needs_valid = true;
      else if (n.regex) needs_valid = true;
    std::string text = needs_valid ? sanitize_utf8(raw) : raw;
    if (!c_.normalizers.empty()) text = normalize(c_.normalizers, std::move(text));
    if (c_.pre_tokenizers.empty()) {
      word(text);
      return;
    }
    words_.spans.clear();
    words_.spans.push_back({0, text.size(), at_start});
    words_.text = std::move(text);
    pre_tokenize(c_.pre_tokenizers, &words_);
    for (const Word& w : words_.spans) word(std::string_view(words_.text).substr(w.b, w.e - w.b));
  }

 private:
  void word(std::string_view w) {
    if (w.empty()) return;
    if (c_.piece_text == PieceText::kByteLevel) {
      cached(w);
      return;
    }
    // Cut before each "▁" that no piece joins to the byte before it (State::
    // joins_before_meta), at a symbol boundary of the lead-byte grouping.
    size_t start = 0;
    for (size_t i = 0; i < w.size();) {
      const size_t len = std::min(w.size() - i, utf8_lead_length(static_cast<unsigned char>(w[i])));
      if (i > start && len == 3 && w.compare(i, 3, kMeta) == 0 &&
          !st_.joins_before_meta[static_cast<unsigned char>(w[i - 1])]) {
        cached(w.substr(start, i - start));
        start = i;
      }
      i += len;
    }
    cached(w.substr(start));
  }

  void cached(std::string_view w) {
    // Words repeat (" the", " of"): remember short ones within this call. Keys live in
    // key_store_ (a deque keeps them in place), ids in one flat array.
    const bool cacheable = w.size() <= 64;
    if (cacheable) {
      const auto it = cache_.find(w);
      if (it != cache_.end()) {
        ids_->insert(ids_->end(), cached_ids_.begin() + it->second.first,
                     cached_ids_.begin() + it->second.first + it->second.second);
        return;
      }
    }
    const size_t first = ids_->size();
    if (c_.model == ModelKind::kSpmScores) spm_word(w);
    else bpe_word(w);
    if (cacheable) {
      key_store_.emplace_back(w);
      cache_.emplace(key_store_.back(), std::make_pair(cached_ids_.size(), ids_->size() - first));
      cached_ids_.insert(cached_ids_.end(), ids_->begin() + first, ids_->end());
    }
  }

  // llama.cpp's SentencePiece BPE: symbols are characters cut by their lead byte,
  // merged by piece score; a symbol that is no piece falls back to its bytes.
  void spm_word(std::string_view w) {
    syms_.clear();
    for (size_t i = 0; i < w.size();) {
      const size_t len = std::min(w.size() - i, utf8_lead_length(static_cast<unsigned char>(w[i])));
      const auto it = st_.index.find(w.substr(i, len));
      syms_.push_back({it == st_.index.end() ? -1 : it->second, uint32_t(i), uint32_t(len), -1, -1});
      i += len;
    }
    link_symbols(&syms_);
    merge_by_score(w, st_.index, c_.scores, -std::numeric_limits<float>::infinity(), &syms_);
    for (const Symbol& s : syms_) {
      if (s.len == 0) continue;
      if (s.id >= 0) {
        ids_->push_back(s.id);
        continue;
      }
      for (uint32_t k = 0; k < s.len; ++k) push_unknown_byte(static_cast<unsigned char>(w[s.start + k]));
    }
  }

  void push_unknown_byte(unsigned char b) {
    if (st_.byte_ids[b] >= 0) ids_->push_back(st_.byte_ids[b]);
    else if (c_.unk_id >= 0) ids_->push_back(c_.unk_id);
  }

  // HF tokenizers' BPE model (and llama.cpp's for GGUF "gpt2"): symbols are the word's
  // bytes (byte-level) or characters (with byte fallback), merged by rank.
  void bpe_word(std::string_view w) {
    if (c_.ignore_merges) {
      const auto it = st_.index.find(w);
      if (it != st_.index.end()) {
        ids_->push_back(it->second);
        return;
      }
    }
    syms_.clear();
    const bool byte_level = c_.piece_text == PieceText::kByteLevel;
    bool last_unk = false;
    for (size_t i = 0; i < w.size();) {
      const unsigned char lead = static_cast<unsigned char>(w[i]);
      if (byte_level) {
        // A byte without a piece cannot be encoded; HF and llama.cpp drop it too.
        if (st_.byte_symbol_ids[lead] >= 0) syms_.push_back({st_.byte_symbol_ids[lead], uint32_t(i), 1, -1, -1});
        ++i;
        continue;
      }
      const size_t len = std::min(w.size() - i, utf8_lead_length(lead));
      const auto it = st_.index.find(w.substr(i, len));
      if (it != st_.index.end()) {
        syms_.push_back({it->second, uint32_t(i), uint32_t(len), -1, -1});
        last_unk = false;
      } else {
        bool all_bytes = c_.byte_fallback;
        for (size_t k = 0; all_bytes && k < len; ++k) all_bytes = st_.byte_ids[static_cast<unsigned char>(w[i + k])] >= 0;
        if (all_bytes) {
          for (size_t k = 0; k < len; ++k)
            syms_.push_back({st_.byte_ids[static_cast<unsigned char>(w[i + k])], uint32_t(i + k), 1, -1, -1});
          last_unk = false;
        } else if (c_.unk_id >= 0) {
          if (c_.fuse_unk && last_unk) syms_.back().len += uint32_t(len);
          else syms_.push_back({c_.unk_id, uint32_t(i), uint32_t(len), -1, -1});
          last_unk = true;
        }
      }
      i += len;
    }
    link_symbols(&syms_);
    merge_by_rank(st_.merges, &syms_);
    for (const Symbol& s : syms_)
      if (s.len > 0) ids_->push_back(s.id);
  }

  const State& st_;
  const Config& c_;
  std::vector<int32_t>* ids_;
  Words words_;
  std::vector<Symbol> syms_;
  std::deque<std::string> key_store_;
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> cache_;  // word -> (offset, count)
  std::vector<int32_t> cached_ids_;
};

}  // namespace

std::vector<int32_t> encode_text(const State& st, const std::string& text, bool add_special, bool parse_special) {
  std::vector<int32_t> ids;
  if (add_special) ids = st.config.prefix;
  Encoder enc(st, &ids);
  for (const Section& s : split_added(st, text, parse_special)) {
    if (s.token >= 0) ids.push_back(s.token);
    else enc.section(text.substr(s.b, s.e - s.b), s.b == 0);
  }
  if (add_special) ids.insert(ids.end(), st.config.suffix.begin(), st.config.suffix.end());
  return ids;
}

Status build_state(Config config, const std::vector<std::string>& pieces, State* st) {
  const std::string& src = config.source;
  const int64_t n = int64_t(pieces.size());
  if (n == 0) return format_error(src + ": the vocabulary is empty");
  if (n > std::numeric_limits<int32_t>::max()) return format_error(src + ": vocabulary too large");
  auto check_id = [&](int64_t id, const std::string& what) -> Status {
    if (id < 0 || id >= n)
      return format_error(src + ": " + what + " is token id " + std::to_string(id) + ", outside the vocabulary of " +
                          std::to_string(n));
    return Status::Ok();
  };
  if (config.model == ModelKind::kSpmScores && int64_t(config.scores.size()) != n)
    return format_error(src + ": " + std::to_string(config.scores.size()) + " scores for " + std::to_string(n) +
                        " tokens");
  config.scores.resize(size_t(n), 0.0f);
  config.control.resize(size_t(n), false);
  if (config.unk_id >= 0) HW_RETURN_IF_ERROR(check_id(config.unk_id, "the unknown token"));
  if (config.bos_id >= 0) HW_RETURN_IF_ERROR(check_id(config.bos_id, "the BOS token"));
  for (int32_t id : config.eos_ids) HW_RETURN_IF_ERROR(check_id(id, "an EOS token"));
  for (int32_t id : config.prefix) HW_RETURN_IF_ERROR(check_id(id, "a token added before the text"));
  for (int32_t id : config.suffix) HW_RETURN_IF_ERROR(check_id(id, "a token added after the text"));
  std::vector<bool> is_added(size_t(n), false);
  for (const AddedToken& a : config.added) {
    HW_RETURN_IF_ERROR(check_id(a.id, "added token '" + a.content + "'"));
    if (a.content.empty()) return format_error(src + ": added token " + std::to_string(a.id) + " is empty");
    is_added[a.id] = true;
  }
  for (const PreTokenizerStep& p : config.pre_tokenizers)
    if (p.kind == PreTokenizerStep::kSplit && !p.regex) return format_error(src + ": a Split step has no pattern");

  const bool byte_level = config.piece_text == PieceText::kByteLevel;
  st->keys.resize(size_t(n));
  st->bytes.resize(size_t(n));
  st->special.assign(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    const std::string& p = pieces[i];
    std::string raw;
    const bool plain = is_added[i] || config.control[i];
    if (byte_level) {
      st->keys[i] = (!plain && byte_level_decode(p, &raw)) ? raw : p;
      st->bytes[i] = st->keys[i];
    } else {
      st->keys[i] = p;
      const int b = (plain || !config.decode_byte_pieces) ? -1 : byte_piece_value(p);
      st->bytes[i] = b >= 0 ? std::string(1, char(b)) : plain ? p : replace_metaspace(p);
    }
    st->special[i] = config.control[i] ? 1 : 0;
  }
  for (const AddedToken& a : config.added) {
    if (a.special) st->special[a.id] = 1;
    st->bytes[a.id] = a.content;
  }
  st->index.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) st->index.emplace(st->keys[i], int32_t(i));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = st->index.find(name);
    st->byte_ids[b] = it == st->index.end() ? -1 : it->second;
    const char one = char(b);
    it = st->index.find(std::string_view(&one, 1));
    st->byte_symbol_ids[b] = (byte_level && it != st->index.end()) ? it->second : -1;
  }

  if (config.model == ModelKind::kBpeRanks) {
    // Merges are spelled as pieces; look them up as pieces (not keys).
    PieceIndex by_piece;
    by_piece.reserve(size_t(n));
    for (int64_t i = 0; i < n; ++i) by_piece.emplace(pieces[i], int32_t(i));
    st->merges.reserve(config.merges.size());
    std::string joined;
    for (size_t r = 0; r < config.merges.size(); ++r) {
      const auto& m = config.merges[r];
      const auto a = by_piece.find(m.first), b = by_piece.find(m.second);
      joined = m.first + m.second;
      const auto c = by_piece.find(joined);
      if (a == by_piece.end() || b == by_piece.end() || c == by_piece.end())
        return format_error(src + ": merge " + std::to_string(r) + " ('" + m.first + "' '" + m.second +
                            "') names a piece that is not in the vocabulary");
      st->merges.emplace(merge_key(a->second, b->second), std::make_pair(int32_t(r), c->second));
    }
  }

  for (const std::string& k : st->keys)
    for (size_t pos = k.find(kMeta, 1); pos != std::string::npos; pos = k.find(kMeta, pos + 1))
      st->joins_before_meta[static_cast<unsigned char>(k[pos - 1])] = true;

  std::vector<int32_t> order(config.added.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = int32_t(k);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
    return config.added[x].content.size() > config.added[y].content.size();
  });
  for (int32_t k : order)
    st->added_by_first_byte[static_cast<unsigned char>(config.added[k].content[0])].push_back(k);
  for (int64_t i = 0; i < n; ++i)
    if (st->special[i]) st->special_list.push_back(int32_t(i));
  st->config = std::move(config);
  st->config.pieces.clear();
  st->config.pieces.shrink_to_fit();
  return Status::Ok();
}

}  // namespace headwise::tok
