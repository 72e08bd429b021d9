// headwise run — generate text with a model, llama2.c style: the prompt's pieces as
// they are fed, then the sampled ones, streamed to stdout, one final newline.
// Statistics go to stderr.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "graph/plan.hpp"
#include "headwise/attention.hpp"
#include "headwise/model.hpp"
#include "headwise/sampler.hpp"
#include "tools/args.hpp"
#include "tools/builtin_model.hpp"
#include "tools/commands.hpp"
#include "tools/npy.hpp"
#include "tools/process_stats.hpp"

namespace headwise::tools {
namespace {


void usage(std::FILE* f) {
  std::fprintf(f,
      "usage: headwise run [MODEL] [options]\n"
      "  MODEL            model.json, a folder with model.json, a GGUF file, a Hugging Face\n"
      "                   folder (config.json + safetensors), or a llama2.c checkpoint .bin\n"
      "                   (default: %s if present, else a built-in model with random weights)\n"
      "  --tokenizer FILE tokenizer.bin (required with a .bin checkpoint; default for the\n"
      "                   default model: %s)\n"
      "  --prompt TEXT    prompt (default: empty)\n"
      "  --tokens IDS     the prompt as comma-separated token ids instead of text (BOS is not\n"
      "                   added; without a tokenizer, generated ids are printed one per line)\n"
      "  -n, --steps N    positions to run, prompt included (default 256; capped at the context)\n"
      "  --temp T         temperature, 0 = greedy (default: generation_config.json's, else 1.0)\n"
      "  --top-p P        nucleus sampling threshold in (0,1] (default: the model's, else 0.9)\n"
      "  --seed S         random seed, > 0 (default: time-based, printed on stderr)\n"
      "  --threads N      threads (default: all cores)\n"
      "  --kv-type T      KV cache element type: f32 | f16 | bf16 (default f32)\n"
      "  --logits FILE    write the logits of every prompt position as a [positions][vocab]\n"
      "                   float32 .npy\n"
      "  --verbose        describe the model and plan on stderr\n"
      "  --synthetic NAME instead of MODEL: a model with seeded random weights (weights seed 1,\n"
      "                   as 'headwise bench' and 'headwise serve' use)\n",
      kDefaultModel, kDefaultTokenizer);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "1,2,3": decimal integers (an optional '-') separated by single commas; an empty
// item ("1,2,", ",1", "1,,2"), spaces or an out-of-range value make it invalid.
bool parse_ids(const std::string& text, std::vector<int32_t>* out) {
  size_t i = 0;
  for (;;) {
    const size_t start = i;
    if (i < text.size() && text[i] == '-') ++i;
    long long v = 0;
    bool digits = false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i] - '0');
      if (v > INT32_MAX + 1LL) return false;
      digits = true;
      ++i;
    }
    if (!digits) return false;
    if (text[start] == '-') v = -v;
    if (v < INT32_MIN || v > INT32_MAX) return false;
    out->push_back(static_cast<int32_t>(v));
    if (i == text.size()) return true;
    if (text[i] != ',') return false;
    ++i;
  }
}

int fail(const Status& s) {
  std::fprintf(stderr, "headwise run: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help", "verbose"},
               {"tokenizer", "prompt", "tokens", "n", "steps", "temp", "top-p", "seed", "threads", "logits",
                "synthetic", "kv-type"})) {
    std::fprintf(stderr, "headwise run: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  if (a.positional().size() > 1) {
    std::fprintf(stderr, "headwise run: one MODEL at most, got %zu\n", a.positional().size());
    return 2;
  }
  const std::string prompt = a.str("prompt");
  const long long steps_arg = a.has("steps") ? a.integer("steps", 256) : a.integer("n", 256);
  double temp = a.number("temp", 1.0);
  double top_p = a.number("top-p", 0.9);
  long long seed = a.integer("seed", 0);
  const long long threads = a.threads();
  if (!a.ok()) {
    std::fprintf(stderr, "headwise run: %s\n", a.error().c_str());
    return 2;
  }
  if (!a.positional().empty() && a.positional()[0].empty()) {
    std::fprintf(stderr, "headwise run: MODEL is an empty path\n");
    return 2;
  }
  if (steps_arg <= 0 || temp < 0 || !(top_p > 0 && top_p <= 1) || threads < 0 ||
      (a.has("seed") && seed <= 0)) {
    std::fprintf(stderr,
                 "headwise run: need -n > 0, --temp >= 0, 0 < --top-p <= 1, --threads >= 0, --seed > 0\n");
    return 2;
  }
  if (!a.has("seed")) seed = static_cast<long long>(std::time(nullptr));
  KvType kv_type = KvType::f32;
  if (a.has("kv-type") && !parse_kv_type(a.str("kv-type"), &kv_type)) {
    std::fprintf(stderr, "headwise run: --kv-type '%s' is not one of f32, f16, bf16\n",
                 a.str("kv-type").c_str());
    return 2;
  }

  const double t_load = now();
  std::shared_ptr<const Model> model;
  std::string model_path = a.positional().empty() ? "" : a.positional()[0];
  ModelOptions mo;
  mo.tokenizer = a.str("tokenizer");
  if (a.has("synthetic")) {
    if (!model_path.empty()) {
      std::fprintf(stderr, "headwise run: give MODEL or --synthetic NAME, not both\n");
      return 2;
    }
    Status s = Model::synthetic(a.str("synthetic"), 1, &model);
    if (!s.ok()) return fail(s);
  } else if (model_path.empty()) {
    default_model(&model_path, &mo.tokenizer);
  }
  if (model) {
    // --synthetic: built above
  } else if (model_path.empty()) {
    std::fprintf(stderr,
                 "headwise run: %s is not here (it comes from ../shared/models, see its README:\n"
                 "  Karpathy's TinyStories stories260K from the llama2.c project).\n"
                 "  Running the same pipeline on a BUILT-IN MODEL WITH SEEDED RANDOM WEIGHTS:\n"
                 "  its text is noise, not a trained model's output.\n",
                 kDefaultModel);
    Status s = builtin_model(&model);
    if (!s.ok()) return fail(s);
  } else {
    Status s = Model::load(model_path, mo, &model);
    if (!s.ok()) return fail(s);
  }
  if (!model->tokenizer() && !a.has("tokens"))
    return fail(invalid_argument(model_path + ": no tokenizer; give one with --tokenizer FILE "
                                 "(or feed token ids with --tokens)"));
  if (a.has("tokens") && a.has("prompt")) {
    std::fprintf(stderr, "headwise run: give --prompt or --tokens, not both\n");
    return 2;
  }
  const double load_s = now() - t_load;
  const ModelInfo& info = model->info();
  // generation_config.json's defaults apply when the options are not given.
  if (!a.has("temp") && info.default_temperature >= 0) temp = info.default_temperature;
  if (!a.has("top-p") && info.default_top_p > 0 && info.default_top_p <= 1) top_p = info.default_top_p;
  if (a.has("verbose"))
    std::fprintf(stderr,
                 "model %s (%s): vocab %d, d_model %d, %d layers, %d heads (%d kv), head_dim %d, "
                 "context %d; weights %.1f MiB; activations %lld floats per token; kernels %s\n",
                 info.name.c_str(), info.source.c_str(), info.vocab_size, info.d_model,
                 info.n_layers, info.n_heads, info.n_kv_heads, info.head_dim, info.max_seq_len,
                 info.weight_bytes / 1048576.0, static_cast<long long>(info.activation_floats_per_row),
                 isa_name());

  const Tokenizer* tok = model->tokenizer();
  std::vector<int32_t> ids;
  if (a.has("tokens")) {
    if (!parse_ids(a.str("tokens"), &ids)) {
      std::fprintf(stderr, "headwise run: --tokens must be comma-separated integers, got '%s'\n",
                   a.str("tokens").c_str());
      return 2;
    }
  } else {
    ids = tok->encode(prompt, true);
  }
  const int n = static_cast<int>(ids.size());
  // Text when there is a tokenizer, else one id per line.
  auto piece = [&](int32_t prev, int32_t id) {
    return tok ? tok->decode(prev, id) : std::to_string(id) + "\n";
  };
  const int steps = static_cast<int>(std::min<long long>(steps_arg, info.max_seq_len));
  if (n > info.max_seq_len)
    return fail(out_of_range("the prompt is " + std::to_string(n) + " tokens, longer than the context of " +
                             std::to_string(info.max_seq_len)));

  SessionOptions so;
  so.threads = static_cast<int>(threads);
  so.all_logits = a.has("logits");
  so.kv_type = kv_type;
  std::unique_ptr<Session> session;
  {
    Status s = model->open_session(so, &session);
    if (!s.ok()) return fail(s);
  }

  // Prompt: one prefill pass over the tokens that fit in `steps` positions.
  const int feed = std::min(n, steps);
  if (a.has("verbose"))  // what the plan decided, per node, for this prompt's pass
    std::fputs(model->plan().describe(std::max(1, std::min(feed, 1024)), so.threads).c_str(), stderr);
  const double t0 = now();
  {
    Status s = session->prefill(ids.data(), feed);
    if (!s.ok()) return fail(s);
  }
  const double prefill_s = now() - t0;
  if (a.has("logits")) {
    Status s = write_npy_f32(a.str("logits"), session->all_logits().data(), {feed, info.vocab_size});
    if (!s.ok()) return fail(s);
  }
  // Printed tokens are t_1 .. t_steps: prompt tokens while there are any, then samples;
  // t_0 too when it is text (a tokenizer that adds no BOS, like GPT-2's).
  if (tok && !a.has("tokens") && n > 0 && ids[0] != tok->bos_id()) std::fputs(tok->decode(-1, ids[0]).c_str(), stdout);
  for (int i = 1; i < std::min(n, steps + 1); ++i) std::fputs(piece(ids[i - 1], ids[i]).c_str(), stdout);
  std::fflush(stdout);

  // The model's end-of-generation ids; llama2.c checkpoints end the text with BOS.
  auto is_end = [&](int32_t id) {
    if (info.eos_ids.empty()) return id == Tokenizer::kBos;
    return std::find(info.eos_ids.begin(), info.eos_ids.end(), id) != info.eos_ids.end();
  };
  Sampler sampler(info.vocab_size, static_cast<float>(temp), static_cast<float>(top_p),
                  static_cast<uint64_t>(seed));
  int generated = 0;
  const double t1 = now();
  if (steps >= n) {
    int32_t token = ids[n - 1];
    for (int k = n; k <= steps; ++k) {
      const int32_t next = sampler.sample(session->logits());
      if (is_end(next)) break;
      std::fputs(piece(token, next).c_str(), stdout);
      std::fflush(stdout);
      ++generated;
      if (k == steps) break;
      Status s = session->decode(next);
      if (!s.ok()) return fail(s);
      token = next;
    }
  }
  const double gen_s = now() - t1;
  std::fputs("\n", stdout);
  std::fflush(stdout);
  std::fprintf(stderr,
               "load %.3f s | prompt %d tokens, %.1f tokens/s | generated %d tokens, %.1f tokens/s | "
               "threads %d | kernels %s | seed %lld | peak memory %.1f MiB\n",
               load_s, feed, feed / std::max(prefill_s, 1e-9), generated,
               generated / std::max(gen_s, 1e-9), threads ? static_cast<int>(threads) : omp_get_max_threads(), isa_name(),
               seed, peak_rss_bytes() / 1048576.0);
  return 0;
}

}  // namespace headwise::tools
