// headwise::Tokenizer: the llama2.c tokenizer (loading/saving tokenizer.bin, score-ordered
// BPE with byte fallback, decoding with llama2.c's decode + safe_printf rules), and the
// decode side and accessors of every other tokenizer (encoding: tokenizer_encode.cpp).
#include "headwise/tokenizer.hpp"

#include <unistd.h>

#include "runtime/tokenizer_state.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "graph/input_file.hpp"
#include "runtime/tokenizer_utf8.hpp"

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

  tok->index_llama2c();
  *out = std::move(tok);
  return Status::Ok();
}


Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::index_llama2c() {
  state_ = std::make_unique<tok::State>();
  state_->keys = pieces_;
  state_->index.reserve(pieces_.size());
  // emplace keeps the first: a duplicated piece is found as its lowest id, as llama2.c's
  // sorted lookup does.
  for (size_t i = 0; i < state_->keys.size(); ++i) state_->index.emplace(state_->keys[i], int32_t(i));
  state_->pair_in_piece.assign(256 * 256, false);
  for (const std::string& p : pieces_)
    for (size_t k = 1; k < p.size(); ++k)
      state_->pair_in_piece[static_cast<unsigned char>(p[k - 1]) * 256 + static_cast<unsigned char>(p[k])] = true;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, bool add_bos) const {
  if (llama2c_) return encode_llama2c(text, add_bos);
  return tok::encode_text(*state_, text, add_bos, false);
}

std::vector<int32_t> Tokenizer::encode(const std::string& text, const EncodeOptions& options) const {
  if (llama2c_) return encode_llama2c(text, options.add_special);
  return tok::encode_text(*state_, text, options.add_special, options.parse_special);
}

std::vector<int32_t> Tokenizer::encode_llama2c(const std::string& text, bool add_bos) const {
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(kBos);
  // The symbols are spans of `buf`, the concatenation of their pieces, so that a pair's
  // lookup string (llama2.c: pieces[a] + pieces[b]) is one span of it.
  std::string buf;
  std::vector<tok::Symbol> syms;
  const int32_t n_vocab = vocab_size();
  const std::vector<bool>& joins = state_->pair_in_piece;

  // Merges the current segment: the adjacent pair whose concatenation scores highest
  // (leftmost on ties) while its score beats llama2.c's starting best of -1e10, through
  // a priority queue. A segment ends where no piece joins the bytes on either side, so
  // merging segments alone gives what merging the whole text would.
  auto flush = [&]() {
    if (syms.empty()) return;
    tok::link_symbols(&syms);
    tok::merge_by_score(buf, state_->index, scores_, kNoMerge, &syms);
    for (const tok::Symbol& s : syms)
      if (s.len > 0) ids.push_back(s.id);
    syms.clear();
    buf.clear();
  };
  auto push_id = [&](int32_t id) {
    const std::string& p = pieces_[id];
    if (!buf.empty() && !p.empty() &&
        !joins[static_cast<unsigned char>(buf.back()) * 256 + static_cast<unsigned char>(p[0])])
      flush();
    syms.push_back({id, uint32_t(buf.size()), uint32_t(p.size()), -1, -1});
    buf += p;
  };
  auto push_bytes = [&](const char* b, size_t n) {
    const auto it = state_->index.find(std::string_view(b, n));
    if (it != state_->index.end()) {
      push_id(it->second);
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      const int32_t id = int32_t(static_cast<unsigned char>(b[k])) + 3;
      // A vocabulary too small for byte fallback maps the byte to <unk> (id 0) instead
      // of reading past its end.
      push_id(id < n_vocab ? id : 0);
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
  flush();
  return ids;
}

std::string Tokenizer::piece_bytes(int32_t prev, int32_t token) const {
  if (token < 0 || token >= vocab_size()) return std::string();
  if (!llama2c_) {
    const std::string& b = state_->bytes[token];
    const bool first = prev < 0 || prev == state_->config.bos_id;
    if (first && state_->config.first_drops_all_meta && !is_special(token)) {
      std::string out;  // the piece without any "▁" (HF Metaspace decoder, token 0)
      const std::string& p = pieces_[token];
      for (size_t i = 0; i < p.size(); ++i) {
        if (p.compare(i, 3, "\xE2\x96\x81") == 0) i += 2;
        else out.push_back(p[i]);
      }
      return b.size() == 1 && p.size() == 6 ? b : out;  // a <0xHH> byte piece stays its byte
    }
    if (state_->config.strip_leading_space && first && !b.empty() && b[0] == ' ') return b.substr(1);
    return b;
  }
  const std::string& p = pieces_[token];
  // sentencepiece drops the dummy-prefix space of the first piece after BOS.
  std::string s = (prev == kBos && !p.empty() && p[0] == ' ') ? p.substr(1) : p;
  const int byte = tok::byte_piece_value(s);
  if (byte >= 0) s.assign(1, char(byte));
  return s;
}

std::string Tokenizer::decode(int32_t prev, int32_t token) const {
  if (!llama2c_) return is_special(token) ? std::string() : piece_bytes(prev, token);
  std::string s = piece_bytes(prev, token);
  // llama2.c's safe_printf: a lone raw byte that is not printable prints nothing.
  if (s.size() == 1 && !printable_byte(static_cast<unsigned char>(s[0]))) return std::string();
  return s;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  // llama2.c: the previous token, as generation streams them. Others: HF's Strip
  // decoder drops one leading space of the whole text, so only the first piece written
  // is a "first" piece (-1); later ones pass a token that is neither -1 nor BOS.
  constexpr int32_t kNotFirst = std::numeric_limits<int32_t>::max();
  int32_t prev = -1;
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) {
      if (llama2c_) prev = id;
      continue;
    }
    out += piece_bytes(llama2c_ ? prev : (out.empty() && prev < 0 ? -1 : kNotFirst), id);
    prev = llama2c_ ? id : kNotFirst;
  }
  return out;
}

std::unique_ptr<Tokenizer> Tokenizer::from_pieces(std::vector<std::string> pieces,
                                                  std::vector<float> scores) {
  auto tok = std::make_unique<Tokenizer>();
  tok->pieces_ = std::move(pieces);
  tok->scores_ = std::move(scores);
  tok->scores_.resize(tok->pieces_.size(), 0.0f);
  for (const std::string& p : tok->pieces_)
    tok->max_token_length_ = std::max<int>(tok->max_token_length_, static_cast<int>(p.size()));
  tok->index_llama2c();
  return tok;
}

Status Tokenizer::from_config(tok::Config config, std::unique_ptr<Tokenizer>* out) {
  auto t = std::make_unique<Tokenizer>();
  t->llama2c_ = false;
  t->pieces_ = config.pieces;
  t->scores_ = config.scores;
  for (const std::string& p : t->pieces_) t->max_token_length_ = std::max<int>(t->max_token_length_, int(p.size()));
  t->state_ = std::make_unique<tok::State>();
  HW_RETURN_IF_ERROR(tok::build_state(std::move(config), t->pieces_, t->state_.get()));
  *out = std::move(t);
  return Status::Ok();
}

int32_t Tokenizer::bos_id() const { return llama2c_ ? kBos : state_->config.bos_id; }

const std::vector<int32_t>& Tokenizer::eos_ids() const {
  static const std::vector<int32_t> llama2c_eos = {kEos};
  return llama2c_ ? llama2c_eos : state_->config.eos_ids;
}

bool Tokenizer::add_bos() const {
  if (llama2c_) return true;
  const auto& p = state_->config.prefix;
  return std::find(p.begin(), p.end(), state_->config.bos_id) != p.end();
}

bool Tokenizer::add_eos() const { return !llama2c_ && !state_->config.suffix.empty(); }

bool Tokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  if (llama2c_) return id == kBos || id == kEos;
  return state_->special[id] != 0;
}

std::vector<std::pair<int32_t, std::string>> Tokenizer::special_tokens() const {
  std::vector<std::pair<int32_t, std::string>> out;
  if (llama2c_) {
    for (int32_t id : {kBos, kEos})
      if (id < vocab_size()) out.emplace_back(id, pieces_[id]);
    return out;
  }
  for (int32_t id : state_->special_list) out.emplace_back(id, pieces_[id]);
  return out;
}

const std::string& Tokenizer::chat_template() const {
  static const std::string none;
  return llama2c_ ? none : state_->config.chat_template;
}

const char* Tokenizer::kind_name() const {
  if (llama2c_) return "llama2c";
  if (state_->config.model == tok::ModelKind::kSpmScores) return "spm";
  return state_->config.piece_text == tok::PieceText::kByteLevel ? "byte-bpe" : "bpe";
}

Status Tokenizer::save(const std::string& path) const {
  if (!llama2c_)
    return unsupported(path + ": only llama2.c tokenizers can be written as tokenizer.bin; this one is " +
                       kind_name());
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
