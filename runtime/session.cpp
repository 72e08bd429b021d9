// Sessions: split a prompt into chunks, run each as one step, keep the logits; and
// batched decode across sessions.
#include <algorithm>
#include <cstring>

#include "graph/plan.hpp"
#include "headwise/model.hpp"
#include "runtime/executor.hpp"
#include "runtime/session_buffers.hpp"

namespace headwise {
namespace {

Status check_tokens(const Session& s, const int32_t* tokens, int n) {
  const int vocab = s.model().info().vocab_size;
  for (int i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return out_of_range("token id " + std::to_string(tokens[i]) + " (at index " +
                          std::to_string(i) + ") is outside the vocabulary 0.." +
                          std::to_string(vocab - 1));
  if (s.position() + n > s.max_context())
    return out_of_range(std::to_string(n) + " tokens at position " + std::to_string(s.position()) +
                        " would exceed the context of " + std::to_string(s.max_context()) +
                        " positions");
  return Status::Ok();
}

}  // namespace

Session::~Session() = default;

const float* Session::logits() const {
  return buf_->logits.data() + size_t(last_logits_row_) * model_->info().vocab_size;
}

void Session::reset() {
  pos_ = 0;
  last_logits_row_ = 0;
  all_logits_.clear();
}

size_t Session::kv_cache_bytes() const { return buf_->kv_bytes; }
size_t Session::kv_bytes_per_token() const {
  return size_t(max_context_) ? buf_->kv_bytes / size_t(max_context_) : 0;
}
KvType Session::kv_type() const { return buf_->kv_type; }
size_t Session::arena_bytes() const { return buf_->arena.size() * sizeof(float); }

void Session::clear_profile() {
  timings_.clear();
  trace_.clear();
}

Status Session::prefill(const int32_t* tokens, int n) {
  if (n <= 0) return invalid_argument("prefill: no tokens");
  if (!tokens) return invalid_argument("prefill: tokens is a null pointer");
  HW_RETURN_IF_ERROR(check_tokens(*this, tokens, n));
  const graph::Plan& plan = model_->plan();
  const int vocab = model_->info().vocab_size;
  if (profile_ && timings_.empty()) init_timings(plan, &timings_);
  if (all_logits_on_) all_logits_.clear();
  for (int done = 0; done < n;) {
    const int M = std::min(max_chunk_, n - done);
    for (int r = 0; r < M; ++r) buf_->pos[r] = pos_ + r;
    Step step;
    step.M = M;
    step.tokens = tokens + done;
    step.pos = buf_->pos.data();
    step.seqs = {StepSeq{this, buf_.get(), 0, M, pos_}};
    step.arena = buf_->arena.data();
    step.logits = buf_->logits.data();
    step.all_logits = all_logits_on_;
    step.threads = threads_;
    step.scratch = buf_->linear_scratch.data();  // sized for max_chunk rows at open
    step.scratch_bytes = buf_->linear_scratch_bytes();
    step.balance = buf_->balance.data();
    step.timings = profile_ ? &timings_ : nullptr;
    step.trace = profile_ ? &trace_ : nullptr;
    step.hook = hook_ ? &hook_ : nullptr;
    HW_RETURN_IF_ERROR(execute(plan, step));
    pos_ += M;
    done += M;
    last_logits_row_ = all_logits_on_ ? M - 1 : 0;
    if (all_logits_on_)
      all_logits_.insert(all_logits_.end(), buf_->logits.data(), buf_->logits.data() + size_t(M) * vocab);
  }
  return Status::Ok();
}

Status Session::decode_batch(Session* const* sessions, const int32_t* tokens, int n, int threads) {
  if (n <= 0 || !sessions || !tokens) return invalid_argument("decode_batch: no sessions");
  const std::vector<int> ones(n, 1);
  return step_batch(sessions, tokens, ones.data(), n, threads, "decode_batch");
}

Status Session::step_batch(Session* const* sessions, const int32_t* tokens, const int* counts, int n,
                           int threads) {
  return step_batch(sessions, tokens, counts, n, threads, "step_batch");
}

Status Session::step_batch(Session* const* sessions, const int32_t* tokens, const int* counts, int n,
                           int threads, const char* fn) {
  const std::string f = fn;
  if (n <= 0 || !sessions || !tokens || !counts) return invalid_argument(f + ": no sessions");
  if (!sessions[0]) return invalid_argument(f + ": session 0 is null");
  const Model* model = &sessions[0]->model();
  int64_t rows = 0;
  for (int i = 0; i < n; ++i) {
    if (!sessions[i]) return invalid_argument(f + ": session " + std::to_string(i) + " is null");
    if (&sessions[i]->model() != model)
      return invalid_argument(f + ": session " + std::to_string(i) + " belongs to another model");
    for (int j = 0; j < i; ++j)
      if (sessions[j] == sessions[i])
        return invalid_argument(f + ": session " + std::to_string(i) + " appears twice");
    if (counts[i] <= 0)
      return invalid_argument(f + ": session " + std::to_string(i) + " has " + std::to_string(counts[i]) +
                              " tokens (at least 1)");
    const Status s = check_tokens(*sessions[i], tokens + rows, counts[i]);
    if (!s.ok()) return Status(s.code(), f + ": session " + std::to_string(i) + ": " + s.message());
    rows += counts[i];
  }
  if (rows > (int64_t(1) << 20)) return invalid_argument(f + ": " + std::to_string(rows) + " rows in one pass");
  if (n == 1) {  // one session: its own prefill/decode (chunked), at the threads asked for
    const int own = sessions[0]->threads_;
    if (threads) sessions[0]->threads_ = threads;
    const Status s = sessions[0]->prefill(tokens, counts[0]);
    sessions[0]->threads_ = own;
    return s;
  }

  const int M = static_cast<int>(rows);
  const graph::Plan& plan = model->plan();
  const int vocab = model->info().vocab_size;
  // The batched rows use the first session's memory, grown to M rows if need be (its
  // arena and logits hold nothing between steps).
  SessionBuffers& lb = *sessions[0]->buf_;
  if (!lb.arena.resize(size_t(plan.graph.arena_cols) * M) || !lb.logits.resize(size_t(n) * vocab))
    return out_of_memory(f + ": out of memory for " + std::to_string(M) + " rows");
  if (lb.pos.size() < size_t(M)) lb.pos.resize(M);
  int32_t* pos = lb.pos.data();
  float* logits = lb.logits.data();
  Session* lead = sessions[0];
  Step step;
  step.M = M;
  step.tokens = tokens;
  for (int i = 0, r = 0; i < n; r += counts[i], ++i) {
    Session* s = sessions[i];
    for (int k = 0; k < counts[i]; ++k) pos[r + k] = s->pos_ + k;
    step.seqs.push_back(StepSeq{s, s->buf_.get(), r, counts[i], s->pos_});
  }
  step.pos = pos;
  step.arena = lb.arena.data();
  step.logits = logits;
  step.threads = threads ? threads : lead->threads_;
  step.scratch = lead->buf_->linear_scratch_for(plan, M, graph::resolve_threads(step.threads));
  if (!step.scratch) return Status(StatusCode::internal, f + ": out of memory");
  step.scratch_bytes = lead->buf_->linear_scratch_bytes();
  step.balance = lead->buf_->balance.data();
  if (lead->profile_ && lead->timings_.empty()) init_timings(plan, &lead->timings_);
  step.timings = lead->profile_ ? &lead->timings_ : nullptr;
  step.trace = lead->profile_ ? &lead->trace_ : nullptr;
  HW_RETURN_IF_ERROR(execute(plan, step));
  // The executor wrote one logits row per sequence (its last token's), in order.
  for (int i = 0; i < n; ++i) {
    Session* s = sessions[i];
    if (i > 0) std::memcpy(s->buf_->logits.data(), logits + size_t(i) * vocab, vocab * sizeof(float));
    s->last_logits_row_ = 0;
    s->pos_ += counts[i];
  }
  return Status::Ok();
}

}  // namespace headwise
