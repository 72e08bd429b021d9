// Parsing the JSON model description (graph/FORMAT.md). Every message names the file
// and the field: "model.json: block[3] (linear): field 'weight' must be a string".
#include "graph/description.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/input_file.hpp"
#include "graph/json_strict.hpp"
#include "kernels/attention/attention.hpp"

namespace headwise::graph {
namespace {

using json = nlohmann::json;

std::string dirname_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string resolve(const std::string& dir, const std::string& file) {
  if (file.empty() || file[0] == '/') return file;
  return dir + "/" + file;
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  Status fail(const std::string& where, const std::string& what) const {
    return format_error(path_ + ": " + (where.empty() ? "" : where + ": ") + what);
  }

  // Reads an integer field; `required` fields must exist; all must be > 0.
  Status positive_int(const json& obj, const std::string& where, const char* key, bool required,
                      int* out) const {
    if (!obj.contains(key)) {
      if (required) return fail(where, std::string("missing field '") + key + "'");
      return Status::Ok();
    }
    const json& v = obj.at(key);
    if (!v.is_number_integer()) return fail(where, std::string("field '") + key + "' must be an integer");
    const long long x = v.get<long long>();
    if (x <= 0 || x > (1LL << 30))
      return fail(where, std::string("field '") + key + "' must be a positive integer, got " + std::to_string(x));
    *out = static_cast<int>(x);
    return Status::Ok();
  }

  // A float field: a finite number within float's range (1e300 would become inf).
  Status number(const json& obj, const std::string& where, const char* key, float* out) const {
    if (!obj.contains(key)) return Status::Ok();
    const json& v = obj.at(key);
    if (!v.is_number()) return fail(where, std::string("field '") + key + "' must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || std::fabs(x) > double(FLT_MAX))
      return fail(where, std::string("field '") + key + "' is " + json_brief(v) +
                             ", not a finite 32-bit float");
    *out = static_cast<float>(x);
    return Status::Ok();
  }

  Status string(const json& obj, const std::string& where, const char* key, std::string* out) const {
    if (!obj.contains(key)) return Status::Ok();
    const json& v = obj.at(key);
    if (!v.is_string()) return fail(where, std::string("field '") + key + "' must be a string");
    *out = v.get<std::string>();
    return Status::Ok();
  }

  // "in"/"out": a string or an array of strings.
  Status names(const json& obj, const std::string& where, const char* key,
               std::vector<std::string>* out) const {
    if (!obj.contains(key)) return fail(where, std::string("missing field '") + key + "'");
    const json& v = obj.at(key);
    if (v.is_string()) {
      out->push_back(v.get<std::string>());
    } else if (v.is_array() && !v.empty()) {
      for (const json& e : v) {
        if (!e.is_string()) return fail(where, std::string("field '") + key + "' must hold tensor names (strings)");
        out->push_back(e.get<std::string>());
      }
    } else {
      return fail(where, std::string("field '") + key + "' must be a tensor name or a non-empty array of names");
    }
    for (const std::string& n : *out)
      if (n.empty()) return fail(where, std::string("field '") + key + "' has an empty tensor name");
    return Status::Ok();
  }

  Status settings(const json& root, Settings* s) const {
    if (!root.contains("settings")) return fail("", "missing field 'settings'");
    const json& o = root.at("settings");
    if (!o.is_object()) return fail("settings", "must be an object");
    static const std::set<std::string> known = {
        "vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim",
        "max_seq_len", "norm_eps", "rope_theta", "rope_style", "rope_freq_factors"};
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!known.count(it.key())) return fail("settings", "unknown field '" + it.key() + "'");
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "vocab_size", true, &s->vocab_size));
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "d_model", true, &s->d_model));
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "n_layers", true, &s->n_layers));
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "n_heads", true, &s->n_heads));
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "max_seq_len", true, &s->max_seq_len));
    s->n_kv_heads = s->n_heads;
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "n_kv_heads", false, &s->n_kv_heads));
    s->head_dim = 0;
    HW_RETURN_IF_ERROR(positive_int(o, "settings", "head_dim", false, &s->head_dim));
    if (s->head_dim == 0) {
      if (s->d_model % s->n_heads != 0)
        return fail("settings", "d_model (" + std::to_string(s->d_model) +
                                    ") is not divisible by n_heads (" + std::to_string(s->n_heads) + ")");
      s->head_dim = s->d_model / s->n_heads;
    }
    if (s->n_heads % s->n_kv_heads != 0)
      return fail("settings", "n_heads (" + std::to_string(s->n_heads) +
                                  ") is not divisible by n_kv_heads (" + std::to_string(s->n_kv_heads) + ")");
    if (s->head_dim > kernels::kMaxHeadDim)
      return fail("settings", "head_dim " + std::to_string(s->head_dim) + " is above " +
                                  std::to_string(kernels::kMaxHeadDim) +
                                  ", a limit of this build (kernels/attention/attention.hpp says why)");
    // Widths are ints downstream: n_heads × head_dim must not wrap (2^29 heads of 8
    // would come out as 64 and pass every shape check).
    for (auto [name, heads] : {std::pair{"n_heads", s->n_heads}, {"n_kv_heads", s->n_kv_heads}})
      if (int64_t(heads) * s->head_dim > kMaxFeatures)
        return fail("settings", std::string(name) + " × head_dim = " + std::to_string(heads) + " × " +
                                    std::to_string(s->head_dim) + " is above " + std::to_string(kMaxFeatures) +
                                    " features, a limit of this build");
    HW_RETURN_IF_ERROR(number(o, "settings", "norm_eps", &s->norm_eps));
    if (!(s->norm_eps > 0.0f)) return fail("settings", "field 'norm_eps' must be > 0");
    HW_RETURN_IF_ERROR(number(o, "settings", "rope_theta", &s->rope_theta));
    if (!(s->rope_theta > 0.0f)) return fail("settings", "field 'rope_theta' must be > 0");
    std::string style = "interleaved";
    HW_RETURN_IF_ERROR(string(o, "settings", "rope_style", &style));
    if (style == "interleaved") s->rope_style = kernels::RopeStyle::interleaved;
    else if (style == "half") s->rope_style = kernels::RopeStyle::half;
    else return fail("settings", "field 'rope_style' must be \"interleaved\" or \"half\", got \"" + style + "\"");
    if (o.contains("rope_freq_factors")) {
      const json& v = o.at("rope_freq_factors");
      if (!v.is_array() || v.size() != size_t(s->head_dim / 2))
        return fail("settings", "field 'rope_freq_factors' must be an array of head_dim/2 (" +
                                    std::to_string(s->head_dim / 2) + ") numbers");
      for (const json& e : v) {
        if (!e.is_number() || !(e.get<double>() > 0))
          return fail("settings", "field 'rope_freq_factors' must hold positive numbers");
        s->rope_freq_factors.push_back(e.get<float>());
      }
    }
    return Status::Ok();
  }

  Status node(const json& o, const std::string& section, size_t index, NodeDesc* n) const {
    std::string where = section + "[" + std::to_string(index) + "]";
    if (!o.is_object()) return fail(where, "must be an object");
    if (!o.contains("op")) return fail(where, "missing field 'op'");
    if (!o.at("op").is_string()) return fail(where, "field 'op' must be a string");
    const std::string opname = o.at("op").get<std::string>();
    if (!parse_op(opname, &n->op)) return fail(where, "unknown op '" + opname + "'");
    where += " (" + opname + ")";
    n->where = where;

    static const std::set<std::string> known = {"op",    "in",     "out",   "weight", "bias",
                                                "layout", "split", "eps",   "causal", "scale",
                                                "approximate", "comment"};
    for (auto it = o.begin(); it != o.end(); ++it)
      if (!known.count(it.key())) return fail(where, "unknown field '" + it.key() + "'");

    HW_RETURN_IF_ERROR(names(o, where, "in", &n->in));
    HW_RETURN_IF_ERROR(names(o, where, "out", &n->out));
    if (static_cast<int>(n->in.size()) != op_inputs(n->op))
      return fail(where, "takes " + std::to_string(op_inputs(n->op)) + " input(s), got " +
                             std::to_string(n->in.size()));
    HW_RETURN_IF_ERROR(string(o, where, "weight", &n->weight));
    HW_RETURN_IF_ERROR(string(o, where, "bias", &n->bias));

    std::string layout = "out_in";
    HW_RETURN_IF_ERROR(string(o, where, "layout", &layout));
    if (layout == "out_in") n->layout = WeightLayout::out_in;
    else if (layout == "in_out") n->layout = WeightLayout::in_out;
    else return fail(where, "field 'layout' must be \"out_in\" or \"in_out\", got \"" + layout + "\"");

    if (o.contains("split")) {
      const json& v = o.at("split");
      if (!v.is_array()) return fail(where, "field 'split' must be an array of widths");
      for (const json& e : v) {
        if (!e.is_number_integer() || e.get<long long>() <= 0 || e.get<long long>() > kMaxFeatures)
          return fail(where, "field 'split' must hold positive integers up to " +
                                 std::to_string(kMaxFeatures) + ", got " + json_brief(e));
        n->split.push_back(e.get<int>());
      }
    }
    HW_RETURN_IF_ERROR(number(o, where, "eps", &n->eps));
    if (o.contains("eps") && !(n->eps > 0.0f)) return fail(where, "field 'eps' must be > 0");
    if (o.contains("causal")) {
      if (!o.at("causal").is_boolean()) return fail(where, "field 'causal' must be true or false");
      n->causal = o.at("causal").get<bool>();
    }
    HW_RETURN_IF_ERROR(number(o, where, "scale", &n->scale));
    if (!(n->scale >= 0.0f)) return fail(where, "field 'scale' must be >= 0");
    std::string approx = "tanh";
    HW_RETURN_IF_ERROR(string(o, where, "approximate", &approx));
    if (approx == "tanh") n->gelu_tanh = true;
    else if (approx == "none") n->gelu_tanh = false;
    else return fail(where, "field 'approximate' must be \"tanh\" or \"none\"");

    // Which ops take which fields.
    const bool weighted = n->op == OpKind::embedding || n->op == OpKind::pos_embedding ||
                          n->op == OpKind::rmsnorm || n->op == OpKind::head_rmsnorm ||
                          n->op == OpKind::layernorm ||
                          n->op == OpKind::linear || n->op == OpKind::logits;
    if (weighted && n->weight.empty()) return fail(where, "missing field 'weight'");
    if (!weighted && !n->weight.empty()) return fail(where, "takes no 'weight'");
    const bool biased = n->op == OpKind::layernorm || n->op == OpKind::linear || n->op == OpKind::logits;
    if (!biased && !n->bias.empty()) return fail(where, "takes no 'bias'");
    if (n->op == OpKind::linear) {
      if (n->out.size() > 1 && n->split.size() != n->out.size())
        return fail(where, "has " + std::to_string(n->out.size()) +
                               " outputs, so 'split' must list one width per output");
      if (n->out.size() == 1 && !n->split.empty())
        return fail(where, "'split' needs one output per width");
    } else {
      if (!n->split.empty()) return fail(where, "takes no 'split'");
      if (n->out.size() != 1) return fail(where, "has exactly one output");
    }
    return Status::Ok();
  }

  Status section(const json& root, const char* key, bool required, std::vector<NodeDesc>* out) const {
    if (!root.contains(key)) {
      if (required) return fail("", std::string("missing field '") + key + "'");
      return Status::Ok();
    }
    const json& arr = root.at(key);
    if (!arr.is_array()) return fail(key, "must be an array of nodes");
    for (size_t i = 0; i < arr.size(); ++i) {
      NodeDesc n;
      HW_RETURN_IF_ERROR(node(arr[i], key, i, &n));
      out->push_back(std::move(n));
    }
    return Status::Ok();
  }

  Status parse(const std::string& text, ModelDesc* d) const {
    json root;
    HW_RETURN_IF_ERROR(parse_json_strict(text.data(), text.data() + text.size(), path_, &root));
    if (!root.is_object()) return fail("", "the description must be a JSON object");
    static const std::set<std::string> known = {"format", "name", "weights", "tokenizer",
                                                "settings", "embed", "block", "head", "comment"};
    for (auto it = root.begin(); it != root.end(); ++it)
      if (!known.count(it.key())) return fail("", "unknown field '" + it.key() + "'");
    std::string format;
    HW_RETURN_IF_ERROR(string(root, "", "format", &format));
    if (format != "headwise-model/1")
      return fail("", "field 'format' must be \"headwise-model/1\", got \"" + format + "\"");
    d->path = path_;
    d->dir = dirname_of(path_);
    HW_RETURN_IF_ERROR(string(root, "", "name", &d->name));
    std::string weights, tokenizer;
    if (!root.contains("weights")) return fail("", "missing field 'weights'");
    HW_RETURN_IF_ERROR(string(root, "", "weights", &weights));
    if (weights.empty()) return fail("", "field 'weights' is empty (it names the .safetensors file)");
    HW_RETURN_IF_ERROR(string(root, "", "tokenizer", &tokenizer));
    d->weights_file = resolve(d->dir, weights);
    d->tokenizer_file = resolve(d->dir, tokenizer);
    HW_RETURN_IF_ERROR(settings(root, &d->settings));
    HW_RETURN_IF_ERROR(section(root, "embed", true, &d->embed));
    HW_RETURN_IF_ERROR(section(root, "block", true, &d->block));
    HW_RETURN_IF_ERROR(section(root, "head", true, &d->head));
    // The block is repeated n_layers times when the graph is built: bound the total
    // before anything is allocated for it.
    const int64_t nodes = int64_t(d->settings.n_layers) * int64_t(d->block.size()) +
                          int64_t(d->embed.size() + d->head.size());
    if (nodes > kMaxNodes)
      return fail("settings", "n_layers " + std::to_string(d->settings.n_layers) + " × " +
                                  std::to_string(d->block.size()) + " block nodes makes " +
                                  std::to_string(nodes) + " nodes, above " + std::to_string(kMaxNodes) +
                                  ", a limit of this build");
    return Status::Ok();
  }

 private:
  std::string path_;
};

}  // namespace

Status parse_description(const std::string& text, const std::string& path, ModelDesc* out) {
  try {
    return Parser(path).parse(text, out);
  } catch (const std::exception& e) {  // a JSON type error we did not foresee
    return format_error(path + ": " + e.what());
  }
}

Status load_description(const std::string& path, ModelDesc* out) {
  std::string text;
  HW_RETURN_IF_ERROR(read_input_file(path, "model description", kMaxDescriptionBytes, &text));
  return parse_description(text, path, out);
}

namespace {

// A float as the shortest decimal that reads back to the same float ("1e-05", not the
// double expansion of 1e-5f).
double tidy(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtof(buf, nullptr) == x) break;
  }
  return std::strtod(buf, nullptr);
}

nlohmann::ordered_json node_json(const NodeDesc& n) {
  using ojson = nlohmann::ordered_json;
  ojson o;
  o["op"] = op_name(n.op);
  o["in"] = n.in.size() == 1 ? ojson(n.in[0]) : ojson(n.in);
  o["out"] = n.out.size() == 1 ? ojson(n.out[0]) : ojson(n.out);
  if (!n.weight.empty()) o["weight"] = n.weight;
  if (!n.bias.empty()) o["bias"] = n.bias;
  if (n.op == OpKind::linear || n.op == OpKind::logits)
    if (n.layout == WeightLayout::in_out) o["layout"] = "in_out";
  if (!n.split.empty()) o["split"] = n.split;
  if (n.eps > 0) o["eps"] = tidy(n.eps);
  if (n.op == OpKind::attention) {
    o["causal"] = n.causal;
    if (n.scale > 0) o["scale"] = tidy(n.scale);
  }
  if (n.op == OpKind::gelu) o["approximate"] = n.gelu_tanh ? "tanh" : "none";
  return o;
}

}  // namespace

std::string description_to_json(const ModelDesc& d, const std::string& weights_file,
                                const std::string& tokenizer_file) {
  // nlohmann's ordered_json keeps the fields in the order written, so the output
  // reads top to bottom like FORMAT.md.
  nlohmann::ordered_json root;
  root["format"] = "headwise-model/1";
  if (!d.name.empty()) root["name"] = d.name;
  root["weights"] = weights_file;
  if (!tokenizer_file.empty()) root["tokenizer"] = tokenizer_file;
  const Settings& s = d.settings;
  nlohmann::ordered_json st;
  st["vocab_size"] = s.vocab_size;
  st["d_model"] = s.d_model;
  st["n_layers"] = s.n_layers;
  st["n_heads"] = s.n_heads;
  st["n_kv_heads"] = s.n_kv_heads;
  st["head_dim"] = s.head_dim;
  st["max_seq_len"] = s.max_seq_len;
  st["norm_eps"] = tidy(s.norm_eps);
  st["rope_theta"] = tidy(s.rope_theta);
  st["rope_style"] = s.rope_style == kernels::RopeStyle::half ? "half" : "interleaved";
  if (!s.rope_freq_factors.empty()) {
    nlohmann::ordered_json f = nlohmann::ordered_json::array();
    for (float x : s.rope_freq_factors) f.push_back(tidy(x));
    st["rope_freq_factors"] = f;
  }
  root["settings"] = st;
  for (auto [key, nodes] : {std::pair{"embed", &d.embed}, {"block", &d.block}, {"head", &d.head}}) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const NodeDesc& n : *nodes) arr.push_back(node_json(n));
    root[key] = arr;
  }
  return root.dump(2) + "\n";
}

}  // namespace headwise::graph
