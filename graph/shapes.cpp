#include "graph/shapes.hpp"

#include "kernels/attention/attention.hpp"

namespace headwise::graph {
namespace {

std::string dims(int64_t r, int64_t c) {
  return r == 1 ? "[" + std::to_string(c) + "]" : "[" + std::to_string(r) + ", " + std::to_string(c) + "]";
}

}  // namespace

Status infer_widths(const Graph& g, const std::string& path, Node* n, std::vector<int>* widths) {
  const Settings& s = g.settings;
  auto fail = [&](const std::string& what) { return format_error(path + ": " + n->where + ": " + what); };
  auto width = [&](int i) { return g.values[n->in[i]].cols; };
  auto name = [&](int i) { return "'" + g.values[n->in[i]].name + "'"; };
  auto is_tokens = [&](int i) { return n->in[i] == g.tokens; };
  // Every op but embedding reads float activations, never the token ids.
  if (n->op != OpKind::embedding)
    for (size_t i = 0; i < n->in.size(); ++i)
      if (is_tokens(static_cast<int>(i))) return fail("cannot read the token ids directly; use 'embedding'");
  auto vector_weight = [&](const char* what, int64_t want) -> Status {
    if (n->w_rows != 1 || n->w_cols != want)
      return fail(std::string(what) + " '" + n->weight_name + "' has shape " + dims(n->w_rows, n->w_cols) +
                  "; expected [" + std::to_string(want) + "]");
    return Status::Ok();
  };
  auto bias_len = [&](int64_t want) -> Status {
    if (!n->b) return Status::Ok();
    const TensorView* t = g.weights->find(n->bias_name);
    if (t->shape[0] != want)
      return fail("bias '" + n->bias_name + "' has shape " + t->shape_str() + "; expected [" +
                  std::to_string(want) + "]");
    return Status::Ok();
  };

  switch (n->op) {
    case OpKind::embedding:
      if (!is_tokens(0)) return fail("reads the token ids: its input must be 'tokens'");
      if (n->w_rows != s.vocab_size)
        return fail("weight '" + n->weight_name + "' has shape " + dims(n->w_rows, n->w_cols) +
                    "; expected " + std::to_string(s.vocab_size) + " rows (settings.vocab_size)");
      if (n->w_cols != s.d_model)
        return fail("weight '" + n->weight_name + "' has shape " + dims(n->w_rows, n->w_cols) +
                    " but settings.d_model is " + std::to_string(s.d_model) + "; expected [" +
                    std::to_string(s.vocab_size) + ", " + std::to_string(s.d_model) + "]");
      widths->push_back(static_cast<int>(n->w_cols));
      return Status::Ok();
    case OpKind::pos_embedding:
      if (n->w_cols != width(0) || n->w_rows < s.max_seq_len)
        return fail("weight '" + n->weight_name + "' has shape " + dims(n->w_rows, n->w_cols) +
                    "; expected at least [" + std::to_string(s.max_seq_len) + ", " +
                    std::to_string(width(0)) + "] (max_seq_len × the width of " + name(0) + ")");
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::rmsnorm:
      HW_RETURN_IF_ERROR(vector_weight("weight", width(0)));
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::head_rmsnorm:
      HW_RETURN_IF_ERROR(vector_weight("weight", s.head_dim));
      if (width(0) % s.head_dim != 0)
        return fail(name(0) + " has " + std::to_string(width(0)) +
                    " features, not a whole number of heads of head_dim " + std::to_string(s.head_dim));
      n->heads = width(0) / s.head_dim;
      n->head_dim = s.head_dim;
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::layernorm:
      HW_RETURN_IF_ERROR(vector_weight("weight", width(0)));
      HW_RETURN_IF_ERROR(bias_len(width(0)));
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::linear:
    case OpKind::logits: {
      if (n->w_rows == 1) return fail("weight '" + n->weight_name + "' must be a matrix");
      n->K = static_cast<int>(n->layout == WeightLayout::out_in ? n->w_cols : n->w_rows);
      n->N = static_cast<int>(n->layout == WeightLayout::out_in ? n->w_rows : n->w_cols);
      if (n->K != width(0))
        return fail("weight '" + n->weight_name + "' has shape " + dims(n->w_rows, n->w_cols) +
                    " (layout " + (n->layout == WeightLayout::out_in ? "out_in" : "in_out") +
                    ") and so takes " + std::to_string(n->K) + " input features, but " + name(0) +
                    " has " + std::to_string(width(0)));
      HW_RETURN_IF_ERROR(bias_len(n->N));
      if (n->split.empty()) {
        widths->push_back(n->N);
      } else {
        long sum = 0;
        for (int w : n->split) sum += w;
        if (sum != n->N)
          return fail("'split' widths add up to " + std::to_string(sum) + " but the weight has " +
                      std::to_string(n->N) + " outputs");
        *widths = n->split;
      }
      return Status::Ok();
    }
    case OpKind::rope:
      if (s.head_dim % 2 != 0) return fail("rope needs an even head_dim, got " + std::to_string(s.head_dim));
      if (width(0) % s.head_dim != 0)
        return fail(name(0) + " has " + std::to_string(width(0)) +
                    " features, not a whole number of heads of head_dim " + std::to_string(s.head_dim));
      n->heads = width(0) / s.head_dim;
      n->head_dim = s.head_dim;
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::attention: {
      // (descriptions are checked when parsed; llama2.c checkpoints and presets reach here directly)
      if (s.head_dim < 1 || s.head_dim > kernels::kMaxHeadDim)
        return fail("head_dim " + std::to_string(s.head_dim) + " is outside 1.." +
                    std::to_string(kernels::kMaxHeadDim) + ", a limit of this build (its attention kernels)");
      n->heads = s.n_heads;
      n->kv_heads = s.n_kv_heads;
      n->head_dim = s.head_dim;
      // 64-bit: the description bounds these products, but a wrap here would let a huge
      // head count pass the width checks and send attention outside its buffers.
      const int64_t qw = int64_t(s.n_heads) * s.head_dim, kvw = int64_t(s.n_kv_heads) * s.head_dim;
      if (width(0) != qw)
        return fail("q " + name(0) + " has " + std::to_string(width(0)) + " features; expected n_heads × head_dim = " + std::to_string(qw));
      for (int i : {1, 2})
        if (width(i) != kvw)
          return fail(std::string(i == 1 ? "k " : "v ") + name(i) + " has " + std::to_string(width(i)) +
                      " features; expected n_kv_heads × head_dim = " + std::to_string(kvw));
      widths->push_back(static_cast<int>(qw));
      return Status::Ok();
    }
    case OpKind::add:
    case OpKind::mul:
    case OpKind::swiglu:
      if (width(0) != width(1))
        return fail(name(0) + " has " + std::to_string(width(0)) + " features but " + name(1) + " has " +
                    std::to_string(width(1)));
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::silu:
    case OpKind::gelu:
      widths->push_back(width(0));
      return Status::Ok();
    case OpKind::Count:
      break;
  }
  return fail("internal: unhandled op");
}

}  // namespace headwise::graph
