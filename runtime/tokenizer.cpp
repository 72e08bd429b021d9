// The llama2.c tokenizer: loading/saving tokenizer.bin, score-ordered BPE encoding
// with byte fallback, and decoding with llama2.c's decode + safe_printf rules.
#include "headwise/tokenizer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "graph/input_file.hpp"

namespace headwise {
namespace {

// A piece longer than this is taken as corruption rather than allocated: real
// vocabularies stay far below it (tok512.bin: 7 bytes, Llama 2's: 48 bytes).
constexpr int32_t kMaxPieceBytes = 1 << 20;

// llama2.c starts its best-merge search at -1e10 and accepts only strictly greater
// scores, so a piece scoring -1e10 or less (or NaN) never merges; same here.
constexpr float kNoMerge = -1e10f;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

template <typename T>
bool read_value(std::FILE* f, T* v) {
  return std::fread(v, sizeof(T), 1, f) == 1;
}

// "<0xHH>" (upper- or lower-case hex) → HH; -1 for any other piece.
int byte_piece_value(const std::string& p) {
  if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = p[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

// The C locale's isprint/isspace for ASCII. Bytes >= 0x80 count as printable: they are
// pieces of a UTF-8 character split by byte fallback, and dropping them (as llama2.c's
// isprint does in the C locale) would turn every such character into nothing.
bool printable_byte(unsigned char b) {
  // isprint / isspace in the C locale, which llama2.c runs in: bytes >= 0x80 are neither.
  const bool print = b >= 0x20 && b <= 0x7e;
  const bool space = b == ' ' || (b >= '\t' && b <= '\r');
  return print || space;
}

}  // namespace

Status Tokenizer::load(const std::string& path, int vocab_size, std::unique_ptr<Tokenizer>* out) {
  if (out == nullptr) return invalid_argument("Tokenizer::load(" + path + "): null output pointer");
  if (vocab_size <= 0)
    return invalid_argument(path + ": vocab_size must be positive, got " + std::to_string(vocab_size));
  // Hostile input (issue 12): only a regular file is read (a FIFO would block, a
  // device never ends); a large vocabulary the file cannot hold (8 bytes a piece at
  // least) is refused before anything is sized from it (a small one is reported below
  // at the piece where the file ends).
  int fd = -1;
  uint64_t file_size = 0;
  HW_RETURN_IF_ERROR(graph::open_input_file(path, "tokenizer file", &fd, &file_size));
  File f(fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    return io_error(path + ": cannot read the tokenizer file: " + std::strerror(errno));
  }
  if (vocab_size > (1 << 16) && file_size < 4 + 8 * uint64_t(vocab_size))
    return format_error(path + ": truncated: " + std::to_string(file_size) + " bytes cannot hold the " +
                        std::to_string(vocab_size) + " pieces of the vocabulary (8 bytes each at least)");

  auto tok = std::make_unique<Tokenizer>();
  int32_t max_len = 0;
  if (!read_value(f.get(), &max_len))
    return format_error(path + ": truncated: no max_token_length header");
  if (max_len < 0 || max_len > kMaxPieceBytes)
    return format_error(path + ": bad max_token_length " + std::to_string(max_len));
  tok->max_token_length_ = max_len;

  tok->pieces_.resize(vocab_size);
  tok->scores_.resize(vocab_size);
  for (int i = 0; i < vocab_size; ++i) {
    const std::string where = path + ": token " + std::to_string(i) + " of " + std::to_string(vocab_size);
    int32_t len = 0;
    if (!read_value(f.get(), &tok->scores_[i]) || !read_value(f.get(), &len))
      return format_error(where + ": truncated before its score/length");
    // llama2.c does not check len against max_token_length; neither do we beyond sanity.
    if (len < 0 || len > kMaxPieceBytes)
      return format_error(where + ": bad piece length " + std::to_string(len));
    std::string& p = tok->pieces_[i];
    p.resize(len);
    if (len > 0 && std::fread(&p[0], 1, len, f.get()) != size_t(len))
      return format_error(where + ": truncated inside its " + std::to_string(len) + "-byte piece");
  }

  // Hostile input (issue 12): bytes after the last piece mean the file holds more
  // pieces than the vocabulary (or is something else); a NaN score has no order.
  if (std::fgetc(f.get()) != EOF)
    return format_error(path + ": trailing bytes after the " + std::to_string(vocab_size) +
                        " pieces of the vocabulary (the file holds more pieces than the model's "
                        "vocab_size, or is not a tokenizer.bin)");
  for (int i = 0; i < vocab_size; ++i)
    if (std::isnan(tok->scores_[i]))
      return format_error(path + ": token " + std::to_string(i) + " of " + std::to_string(vocab_size) +
                          ": its score is NaN");

  tok->sorted_.reserve(vocab_size);
  for (int i = 0; i < vocab_size; ++i) tok->sorted_.emplace_back(tok->pieces_[i], i);
  // Sorting by (piece, id) makes lookup() return the lowest id of a duplicated piece.
  std::sort(tok->sorted_.begin(), tok->sorted_.end());
  *out = std::move(tok);
  return Status::Ok();
}

int32_t Tokenizer::lookup(const std::string& s) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), s,
                             [](const std::pair<std::string, int32_t>& e, const std::string& key) {
                               return e.first < key;
                             });
  return (it != sorted_.end() && it->first == s) ? it->second : -1;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, bool add_bos) const {
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(kBos);
  // Code-point ids and their byte fallbacks; one per byte at most.
  std::vector<int32_t> toks;
  toks.reserve(text.size() + 1);

  auto push_bytes = [&](const char* b, size_t n) {
    const int32_t id = lookup(std::string(b, n));
    if (id >= 0) {
      toks.push_back(id);
      return;
    }
    // Byte fallback: id = byte + 3, which a vocabulary of fewer than 259 pieces may not
    // have (found by fuzz/tokenizer_bin_fuzz: the merge loop then read past pieces_);
    // such a byte becomes <unk> (id 0).
    for (size_t k = 0; k < n; ++k) {
      const int32_t fallback = int32_t(static_cast<unsigned char>(b[k])) + 3;
      toks.push_back(fallback < vocab_size() ? fallback : 0);
    }
  };

  // sentencepiece's dummy prefix: the text is encoded as if it began with a space.
  if (!text.empty()) push_bytes(" ", 1);

  // Split into UTF-8 code points the way llama2.c does, without validating: a group is
  // a byte plus the continuation bytes (10xxxxxx) after it, at most 4 bytes in all; a
  // stray continuation byte starts a group of its own. Unlike llama2.c (a C string), a
  // NUL byte does not end the text: it is encoded like any other byte.
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    size_t len = 1;
    while (len < 4 && i + len < n && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) ++len;
    push_bytes(text.data() + i, len);
    i += len;
  }

  // Merge the adjacent pair whose concatenation scores highest (leftmost on ties)
  // until none merges. Pair results are cached and only the two pairs touching a
  // merge are looked up again, so a merge costs a scan of floats, not of strings.
  std::vector<int32_t> pair_id;   // (toks.size() - 1): merged piece id or -1
  std::vector<float> pair_score;  // (toks.size() - 1): its score, kNoMerge if none
  auto eval = [&](size_t i) {
    const int32_t id = lookup(pieces_[toks[i]] + pieces_[toks[i + 1]]);
    pair_id[i] = id;
    pair_score[i] = id >= 0 ? scores_[id] : kNoMerge;
  };
  if (toks.size() >= 2) {
    pair_id.resize(toks.size() - 1);
    pair_score.resize(toks.size() - 1);
    for (size_t i = 0; i + 1 < toks.size(); ++i) eval(i);
  }
  for (;;) {
    float best = kNoMerge;
    size_t best_i = SIZE_MAX;
    for (size_t i = 0; i < pair_score.size(); ++i)
      if (pair_id[i] >= 0 && pair_score[i] > best) {
        best = pair_score[i];
        best_i = i;
      }
    if (best_i == SIZE_MAX) break;
    toks[best_i] = pair_id[best_i];
    toks.erase(toks.begin() + best_i + 1);
    pair_id.erase(pair_id.begin() + best_i);
    pair_score.erase(pair_score.begin() + best_i);
    if (best_i > 0) eval(best_i - 1);
    if (best_i + 1 < toks.size()) eval(best_i);
  }

  ids.insert(ids.end(), toks.begin(), toks.end());
  return ids;
}

std::string Tokenizer::piece_bytes(int32_t prev, int32_t token) const {
  if (token < 0 || token >= vocab_size()) return std::string();
  const std::string& p = pieces_[token];
  // sentencepiece drops the dummy-prefix space of the first piece after BOS.
  std::string s = (prev == kBos && !p.empty() && p[0] == ' ') ? p.substr(1) : p;
  const int byte = byte_piece_value(s);
  if (byte >= 0) s.assign(1, char(byte));
  return s;
}

std::string Tokenizer::decode(int32_t prev, int32_t token) const {
  std::string s = piece_bytes(prev, token);
  // llama2.c's safe_printf: a lone raw byte that is not printable prints nothing.
  if (s.size() == 1 && !printable_byte(static_cast<unsigned char>(s[0]))) return std::string();
  return s;
}

std::unique_ptr<Tokenizer> Tokenizer::from_pieces(std::vector<std::string> pieces,
                                                  std::vector<float> scores) {
  auto tok = std::make_unique<Tokenizer>();
  tok->pieces_ = std::move(pieces);
  tok->scores_ = std::move(scores);
  tok->scores_.resize(tok->pieces_.size(), 0.0f);
  for (const std::string& p : tok->pieces_)
    tok->max_token_length_ = std::max<int>(tok->max_token_length_, static_cast<int>(p.size()));
  for (size_t i = 0; i < tok->pieces_.size(); ++i) tok->sorted_.emplace_back(tok->pieces_[i], int32_t(i));
  std::sort(tok->sorted_.begin(), tok->sorted_.end());
  return tok;
}

Status Tokenizer::save(const std::string& path) const {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) return io_error(path + ": cannot create tokenizer file: " + std::strerror(errno));
  // llama2.c sizes its merge buffer from max_token_length, so never write less than
  // the longest piece; a value loaded from a well-formed file is kept as it was.
  int32_t max_len = max_token_length_;
  for (const std::string& p : pieces_) max_len = std::max<int32_t>(max_len, int32_t(p.size()));
  bool ok = std::fwrite(&max_len, sizeof max_len, 1, f.get()) == 1;
  for (size_t i = 0; ok && i < pieces_.size(); ++i) {
    const int32_t len = int32_t(pieces_[i].size());
    ok = std::fwrite(&scores_[i], sizeof(float), 1, f.get()) == 1 &&
         std::fwrite(&len, sizeof len, 1, f.get()) == 1 &&
         (len == 0 || std::fwrite(pieces_[i].data(), 1, len, f.get()) == size_t(len));
  }
  if (!ok) return io_error(path + ": write failed: " + std::strerror(errno));
  if (std::fclose(f.release()) != 0)
    return io_error(path + ": write failed on close: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace headwise
