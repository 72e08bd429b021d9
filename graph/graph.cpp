// Building the executable graph: expand the block over layers, resolve names to values,
// bind and check weights (shapes.cpp holds the per-op rules), find storage groups and
// plan the activation arena.
#include "graph/graph.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "graph/shapes.hpp"

namespace headwise::graph {

// ---- WeightSet ------------------------------------------------------------------------

Status WeightSet::open_safetensors(const std::string& path, std::unique_ptr<WeightSet>* out) {
  auto ws = std::unique_ptr<WeightSet>(new WeightSet);
  HW_RETURN_IF_ERROR(SafetensorsFile::open(path, &ws->st_));
  *out = std::move(ws);
  return Status::Ok();
}

Status WeightSet::open_llama2c(const std::string& path, std::unique_ptr<WeightSet>* out) {
  auto ws = std::unique_ptr<WeightSet>(new WeightSet);
  HW_RETURN_IF_ERROR(Llama2cCheckpoint::open(path, &ws->ckpt_));
  *out = std::move(ws);
  return Status::Ok();
}

std::unique_ptr<WeightSet> WeightSet::in_memory(std::vector<TensorView> views,
                                                std::deque<std::vector<float>> data,
                                                std::string label) {
  auto ws = std::unique_ptr<WeightSet>(new WeightSet);
  ws->memory_views_ = std::move(views);
  ws->converted_ = std::move(data);
  ws->memory_label_ = std::move(label);
  return ws;
}

std::unique_ptr<WeightSet> WeightSet::external(std::vector<TensorView> views,
                                               std::shared_ptr<const void> owner, std::string label) {
  auto ws = std::unique_ptr<WeightSet>(new WeightSet);
  ws->memory_views_ = std::move(views);
  ws->owner_ = std::move(owner);
  ws->memory_label_ = std::move(label);
  return ws;
}

const TensorView* WeightSet::find(const std::string& name) const {
  if (st_) return st_->find(name);
  if (ckpt_) return ckpt_->find(name);
  for (const TensorView& t : memory_views_)
    if (t.name == name) return &t;
  return nullptr;
}
const std::vector<TensorView>& WeightSet::tensors() const {
  return st_ ? st_->tensors() : ckpt_ ? ckpt_->tensors() : memory_views_;
}
const std::string& WeightSet::path() const {
  return st_ ? st_->path() : ckpt_ ? ckpt_->path() : memory_label_;
}

const float* WeightSet::f32(const TensorView& t) {
  if (t.dtype == DType::f32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  converted_.emplace_back(static_cast<size_t>(t.numel()));
  to_f32(t.dtype, t.data, converted_.back().size(), converted_.back().data());
  return converted_.back().data();
}

// ---- building -----------------------------------------------------------------------------

namespace {

constexpr int64_t kMaxDim = int64_t(1) << 30;

std::string with_layer(const std::string& s, int layer) {
  std::string r = s;
  const std::string key = "{layer}";
  for (size_t p = r.find(key); p != std::string::npos; p = r.find(key, p))
    r.replace(p, key.size(), std::to_string(layer));
  return r;
}

class Builder {
 public:
  Builder(const ModelDesc& d, Graph* g) : desc_(d), g_(g) {}

  Status fail(const std::string& where, const std::string& what) const {
    return format_error(desc_.path + ": " + where + ": " + what);
  }

  Status add(const NodeDesc& nd, int layer) {
    Node n;
    n.op = nd.op;
    n.layer = layer;
    n.where = nd.where + (layer >= 0 ? ", layer " + std::to_string(layer) : "");
    n.weight_name = layer >= 0 ? with_layer(nd.weight, layer) : nd.weight;
    n.bias_name = layer >= 0 ? with_layer(nd.bias, layer) : nd.bias;
    n.layout = nd.layout;
    n.split = nd.split;
    n.eps = nd.eps > 0 ? nd.eps : g_->settings.norm_eps;
    n.causal = nd.causal;
    n.scale = nd.scale;
    n.gelu_tanh = nd.gelu_tanh;
    const int idx = static_cast<int>(g_->nodes.size());
    for (const std::string& name : nd.in) {
      auto it = current_.find(name);
      if (it == current_.end())
        return fail(n.where, "input '" + name + "' is not produced by any earlier node" +
                                 (name == "tokens" ? "" : " (the graph input is 'tokens')"));
      n.in.push_back(it->second);
      g_->values[it->second].last_use = idx;
    }
    HW_RETURN_IF_ERROR(bind_weights(&n));
    std::vector<int> widths;
    HW_RETURN_IF_ERROR(infer_widths(*g_, desc_.path, &n, &widths));
    for (size_t i = 0; i < nd.out.size(); ++i) {
      Value v;
      v.name = nd.out[i];
      v.cols = widths[i];
      v.producer = idx;
      n.out.push_back(static_cast<int>(g_->values.size()));
      current_[nd.out[i]] = n.out.back();
      g_->values.push_back(v);
    }
    if (n.op == OpKind::attention) n.kv_slot = g_->kv_slots++;
    g_->nodes.push_back(std::move(n));
    return Status::Ok();
  }

  Status bind_weights(Node* n) {
    for (auto [name, ptr, is_bias] : {std::tuple{&n->weight_name, &n->w, false},
                                      std::tuple{&n->bias_name, &n->b, true}}) {
      if (name->empty()) continue;
      const TensorView* t = g_->weights->find(*name);
      if (!t)
        return fail(n->where, std::string(is_bias ? "bias" : "weight") + " tensor '" + *name +
                                  "' is not in " + g_->weights->path());
      // Widths and row counts are ints downstream; a dimension of 0 (legal in safetensors)
      // or past kMaxDim would be truncated or make an empty weight.
      for (int64_t d : t->shape)
        if (d < 1 || d > kMaxDim)
          return fail(n->where, std::string(is_bias ? "bias" : "weight") + " tensor '" + *name +
                                    "' has shape " + t->shape_str() + "; every dimension must be in 1.." +
                                    std::to_string(kMaxDim) + " (a limit of this build)");
      if (!is_bias) {
        if (t->shape.size() == 1) {
          n->w_rows = 1;
          n->w_cols = t->shape[0];
        } else if (t->shape.size() == 2) {
          n->w_rows = t->shape[0];
          n->w_cols = t->shape[1];
        } else {
          return fail(n->where, "weight tensor '" + *name + "' has shape " + t->shape_str() +
                                    "; expected 1 or 2 dimensions");
        }
      } else if (t->shape.size() != 1) {
        return fail(n->where, "bias tensor '" + *name + "' has shape " + t->shape_str() +
                                  "; expected 1 dimension");
      }
      // I32 holds GPTQ/AWQ's packed integers, which the Hugging Face loader turns into
      // blocks (formats/hf_quantized.hpp): as a model's weight it would be read as numbers.
      if (t->dtype == DType::i32)
        return fail(n->where, std::string(is_bias ? "bias" : "weight") + " tensor '" + *name +
                                  "' is I32 (integers); a weight must be F32, F16, BF16 or a block type");
      used_.insert(*name);
      // Products read non-f32 matrices as stored: never expanded to f32. So does the
      // token embedding, which converts the rows a step looks up (a Q4_K table of 32000
      // × 2048 is 36 MB as stored, 250 MB expanded).
      if (!is_bias && t->dtype != DType::f32 && t->shape.size() == 2 &&
          (((n->op == OpKind::linear || n->op == OpKind::logits) && n->layout == WeightLayout::out_in) ||
           n->op == OpKind::embedding)) {
        n->wq = t->data;
        n->wq_type = t->dtype;
        n->wq_perm = t->perm;
        continue;
      }
      if (t->perm)  // only a product reads a matrix whose columns are stored permuted
        return fail(n->where, "weight tensor '" + *name + "' is stored with permuted columns (GPTQ act-order), "
                              "which only a linear layer's product reads");
      *ptr = g_->weights->f32(*t);
    }
    return Status::Ok();
  }

  Status run() {
    g_->settings = desc_.settings;
    g_->name = desc_.name;
    Value tokens;
    tokens.name = "tokens";
    tokens.cols = 1;
    g_->values.push_back(tokens);
    current_["tokens"] = 0;
    for (const NodeDesc& nd : desc_.embed) HW_RETURN_IF_ERROR(add(nd, -1));
    for (int l = 0; l < desc_.settings.n_layers; ++l)
      for (const NodeDesc& nd : desc_.block) HW_RETURN_IF_ERROR(add(nd, l));
    for (const NodeDesc& nd : desc_.head) HW_RETURN_IF_ERROR(add(nd, -1));

    // Exactly one classifier, at the very end.
    if (g_->nodes.empty() || g_->nodes.back().op != OpKind::logits)
      return fail("head", "must end with a 'logits' node");
    for (size_t i = 0; i + 1 < g_->nodes.size(); ++i)
      if (g_->nodes[i].op == OpKind::logits)
        return fail(g_->nodes[i].where, "only the last node of 'head' may be 'logits'");
    g_->logits = g_->nodes.back().out[0];
    if (g_->values[g_->logits].cols != desc_.settings.vocab_size)
      return fail(g_->nodes.back().where, "produces " + std::to_string(g_->values[g_->logits].cols) +
                                              " logits but settings.vocab_size is " +
                                              std::to_string(desc_.settings.vocab_size));
    if (g_->kv_slots == 0) return fail("block", "has no attention node");

    // Every tensor in the file must be used: an extra tensor means the description and
    // the weights do not belong together (or a name is misspelt on one side).
    for (const TensorView& t : g_->weights->tensors())
      if (!used_.count(t.name))
        return format_error(g_->weights->path() + ": tensor '" + t.name +
                            "' is not used by the description " + desc_.path);
    return Status::Ok();
  }

 private:
  const ModelDesc& desc_;
  Graph* g_;
  std::map<std::string, int> current_;
  std::set<std::string> used_;
};

// Ops that may write their output over an input (same width, elementwise per row).
int in_place_input(const Node& n, const Graph& g) {
  switch (n.op) {
    case OpKind::rope:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::rmsnorm:
    case OpKind::head_rmsnorm:
    case OpKind::layernorm:
    case OpKind::pos_embedding:
      return 0;
    case OpKind::add:
    case OpKind::mul:
    case OpKind::swiglu:
      return 0;  // (the first operand; the second is read in step)
    case OpKind::embedding:
    case OpKind::linear:
    case OpKind::attention:
    case OpKind::logits:
    case OpKind::Count:
      return -1;
  }
  return -1;
}

// Storage groups and the arena plan.
void plan_memory(Graph* g) {
  const int nv = static_cast<int>(g->values.size());
  std::vector<int> parent(nv);
  for (int i = 0; i < nv; ++i) parent[i] = i;
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // Attention reads K and V from the cache: mark those values.
  for (const Node& n : g->nodes)
    if (n.op == OpKind::attention) {
      g->values[n.in[1]].kv_slot = g->values[n.in[2]].kv_slot = n.kv_slot;
      g->values[n.in[1]].kv_part = 0;
      g->values[n.in[2]].kv_part = 1;
    }
  // In-place chains: output joins its input's group when nothing reads the input later.
  // A chain never mixes a cache value with an arena value, and a cache value only chains
  // through rope (the op that rotates K in place after its projection).
  for (int i = static_cast<int>(g->nodes.size()) - 1; i >= 0; --i) {
    const Node& n = g->nodes[i];
    const int k = in_place_input(n, *g);
    if (k < 0) continue;
    Value& in = g->values[n.in[k]];
    Value& out = g->values[n.out[0]];
    if (in.producer < 0 || in.last_use != i || in.cols != out.cols) continue;
    if (out.kv_slot >= 0 || in.kv_slot >= 0) {
      if (n.op != OpKind::rope || in.kv_slot >= 0) continue;
      in.kv_slot = out.kv_slot;
      in.kv_part = out.kv_part;
    }
    parent[find(n.out[0])] = find(n.in[k]);
  }
  std::map<int, int> group_of_root;
  for (int v = 1; v < nv; ++v) {  // value 0 is the token input (not a float buffer)
    if (v == g->logits) continue;  // the session's logits buffer
    const int r = find(v);
    auto it = group_of_root.find(r);
    if (it == group_of_root.end()) {
      Group grp;
      grp.cols = g->values[v].cols;
      grp.first = g->values[v].producer;
      grp.last = std::max(g->values[v].last_use, g->values[v].producer);
      it = group_of_root.emplace(r, static_cast<int>(g->groups.size())).first;
      g->groups.push_back(grp);
    }
    Group& grp = g->groups[it->second];
    grp.first = std::min(grp.first, g->values[v].producer);
    grp.last = std::max({grp.last, g->values[v].last_use, g->values[v].producer});
    if (g->values[v].kv_slot >= 0) {
      grp.kv_slot = g->values[v].kv_slot;
      grp.kv_part = g->values[v].kv_part;
    }
    g->values[v].group = it->second;
  }
  // Greedy by size (largest first), each at the lowest offset that does not overlap a
  // placed group alive at the same time. Cache groups get arena room too: a batched
  // step over several sequences computes K/V here and scatters them to each cache.
  std::vector<int> order(g->groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return g->groups[a].cols > g->groups[b].cols; });
  std::vector<int> placed;
  int64_t total = 0;
  for (int gi : order) {
    Group& grp = g->groups[gi];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int pj : placed) {
      const Group& o = g->groups[pj];
      if (o.last < grp.first || grp.last < o.first) continue;
      busy.push_back({o.offset, o.offset + o.cols});
    }
    std::sort(busy.begin(), busy.end());
    // rows of every group start 64-byte aligned: offsets are multiples of 16 floats
    auto round16 = [](int64_t x) { return (x + 15) / 16 * 16; };
    int64_t off = 0;
    for (auto [b, e] : busy) {
      if (round16(off) + grp.cols <= b) break;
      off = std::max(off, e);
    }
    grp.offset = round16(off);
    total = std::max(total, grp.offset + grp.cols);
    placed.push_back(gi);
  }
  g->arena_cols = (total + 15) / 16 * 16;
}

}  // namespace

Status build_graph(const ModelDesc& desc, std::unique_ptr<WeightSet> weights, Graph* out) {
  out->weights = std::move(weights);
  HW_RETURN_IF_ERROR(Builder(desc, out).run());
  plan_memory(out);
  return Status::Ok();
}

}  // namespace headwise::graph
