// headwise heads — what every attention head does: previous-token, sink, local,
// entropy and induction scores with a dominant role (headwise/analysis/head_roles.hpp has the
// definitions), and with --text the loss increase when a head or a layer is zeroed.
#include <cmath>
#include <cstdio>
#include <string>

#include "headwise/analysis/head_roles.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "tools/maps_common.hpp"

namespace headwise::tools {
namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
      "usage: headwise heads [MODEL] [options]\n"
      "  MODEL            model.json, a folder with model.json, a GGUF file, a Hugging Face\n"
      "                   folder (config.json + safetensors), or a llama2.c checkpoint .bin\n"
      "                   (default: %s if present, else a built-in random model)\n"
      "  --tokenizer FILE tokenizer.bin (default for the default model: %s)\n"
      "  --text FILE      score the heads on this text (its first context-many tokens) and\n"
      "                   report the next-token loss increase when each head / layer is zeroed\n"
      "                   (default: no ablation; scores on a built-in paragraph)\n"
      "  --json           print JSON instead of a table\n"
      "  --seed S         seed of the random induction sequence, >= 0 (default 1)\n"
      "  --threads N      threads (default: all cores)\n"
      "scores (means over query rows i >= 1): prev = weight on i-1, sink = weight on 0,\n"
      "local = weight on i-3..i, entropy in nats, induction = on [BOS, r, r] with r 32\n"
      "distinct random tokens, the weight from r_j's second occurrence to the token after\n"
      "its first; role = the score >= 0.5 and >= 1.5x the others (local counted beyond\n"
      "prev), else mixed.\n",
      kMapsDefaultModel, kMapsDefaultTokenizer);
}

int fail(const Status& s) {
  std::fprintf(stderr, "headwise heads: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int cmd_heads(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help", "json"}, {"tokenizer", "text", "seed", "threads", "synthetic"})) {
    std::fprintf(stderr, "headwise heads: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  const long long seed = a.integer("seed", 1), threads = a.threads();
  if (!a.ok() || seed < 0 || threads < 0 || a.positional().size() > 1 ||
      (a.has("synthetic") && !a.positional().empty())) {
    std::fprintf(stderr, "headwise heads: %s\n",
                 !a.ok() ? a.error().c_str() : "need --seed >= 0, --threads >= 0 and one MODEL at most");
    return 2;
  }
  std::shared_ptr<const Model> model;
  std::string label;
  if (!load_model_arg("heads", a, &model, &label)) return 1;
  std::string text = kHeadsDefaultText;
  if (a.has("text"))
    if (Status s = read_text_file(a.str("text"), &text); !s.ok()) return fail(s);
  const std::vector<int32_t> ids = encode_for(*model, text);

  RoleOptions ro;
  ro.threads = static_cast<int>(threads);
  ro.seed = static_cast<uint64_t>(seed);
  RoleTable t;
  if (Status s = head_roles(*model, ids, ro, &t); !s.ok()) return fail(s);
  Ablation ab;
  const bool ablate = a.has("text");
  if (ablate)
    if (Status s = ablation_study(*model, ids, ro.threads, &ab); !s.ok()) return fail(s);

  if (a.has("json")) {
    // Written by hand: the only strings are the model label and role names.
    std::printf("{\n  \"model\": %s,\n  \"layers\": %d,\n  \"heads_per_layer\": %d,\n"
                "  \"text_tokens\": %d,\n  \"induction_length\": %d,\n  \"seed\": %lld,\n  \"heads\": [\n",
                json_string(label).c_str(), t.n_layers, t.n_heads, t.text_tokens, t.induction_length, seed);
    for (size_t i = 0; i < t.heads.size(); ++i) {
      const HeadRole& r = t.heads[i];
      std::printf("    {\"layer\": %d, \"head\": %d, \"prev_token\": %s, \"sink\": %s, \"local\": %s, "
                  "\"entropy\": %s, \"induction\": %s, \"role\": %s",
                  r.layer, r.head, json_number(r.scores.prev_token).c_str(), json_number(r.scores.sink).c_str(),
                  json_number(r.scores.local).c_str(), json_number(r.scores.entropy).c_str(),
                  json_number(r.scores.induction).c_str(), json_string(r.role).c_str());
      if (ablate) std::printf(", \"loss_increase\": %s", json_number(ab.head[r.layer][r.head]).c_str());
      std::printf("}%s\n", i + 1 < t.heads.size() ? "," : "");
    }
    std::printf("  ]");
    if (ablate) {
      std::printf(",\n  \"ablation\": {\"baseline_loss\": %s, \"layer_loss_increase\": [",
                  json_number(ab.baseline_loss).c_str());
      for (int l = 0; l < t.n_layers; ++l) std::printf("%s%s", l ? ", " : "", json_number(ab.layer[l]).c_str());
      std::printf("]}");
    }
    std::printf("\n}\n");
    return 0;
  }
  const std::string source = ablate ? a.str("text") : "the built-in paragraph";
  std::printf("model %s: %d layers x %d heads; scores on %d tokens of %s; induction on 2x%d random "
              "tokens (seed %lld)\n",
              label.c_str(), t.n_layers, t.n_heads, t.text_tokens, source.c_str(), t.induction_length, seed);
  std::printf("%5s %4s %7s %7s %7s %8s %9s  %s\n", "layer", "head", "prev", "sink", "local", "entropy",
              "induction", ablate ? "role             loss+ (zeroed)" : "role");
  for (const HeadRole& r : t.heads) {
    std::printf("%5d %4d %7.4f %7.4f %7.4f %8.4f %9.4f  %-*s", r.layer, r.head, r.scores.prev_token,
                r.scores.sink, r.scores.local, r.scores.entropy, r.scores.induction, ablate ? 15 : 0,
                r.role.c_str());
    if (ablate) std::printf("  %+.5f", ab.head[r.layer][r.head]);
    std::printf("\n");
  }
  if (ablate) {
    std::printf("\nbaseline next-token loss %.5f nats/token; zeroing a whole layer:\n", ab.baseline_loss);
    for (int l = 0; l < t.n_layers; ++l) std::printf("  layer %d  %+.5f\n", l, ab.layer[l]);
  }
  return 0;
}

}  // namespace headwise::tools
