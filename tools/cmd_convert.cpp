// headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o DIR
// Writes DIR/model.json (the Llama description), DIR/model.safetensors (the tensors,
// f32, Meta Llama names) and DIR/tokenizer.bin.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "graph/presets.hpp"
#include "graph/weights.hpp"
#include "headwise/tokenizer.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"

namespace headwise::tools {
namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o DIR\n"
               "  writes DIR/model.json, DIR/model.safetensors and DIR/tokenizer.bin\n"
               "  (DIR is created if needed; existing files there are replaced)\n");
}

int fail(const Status& s) {
  std::fprintf(stderr, "headwise convert: %s\n", s.message().c_str());
  return 1;
}

std::string stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  return base.substr(0, base.find_last_of('.'));
}

}  // namespace

int cmd_convert(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help"}, {"tokenizer", "o", "output"})) {
    std::fprintf(stderr, "headwise convert: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  const std::string out_dir = a.has("o") ? a.str("o") : a.str("output");
  if (a.positional().size() != 2 || a.positional()[0] != "llama2c" || out_dir.empty() ||
      !a.has("tokenizer")) {
    usage(stderr);
    return 2;
  }
  const std::string ckpt_path = a.positional()[1];
  std::unique_ptr<graph::Llama2cCheckpoint> ckpt;
  Status s = graph::Llama2cCheckpoint::open(ckpt_path, &ckpt);
  if (!s.ok()) return fail(s);
  std::unique_ptr<Tokenizer> tok;
  s = Tokenizer::load(a.str("tokenizer"), ckpt->config().vocab_size, &tok);
  if (!s.ok()) return fail(s);

  if (::mkdir(out_dir.c_str(), 0777) != 0 && errno != EEXIST)
    return fail(io_error(out_dir + ": cannot create the folder"));
  const graph::Llama2cConfig& c = ckpt->config();
  graph::ModelDesc desc =
      graph::llama_preset(graph::llama2c_settings(c), c.hidden_dim, c.shared_classifier, stem(ckpt_path)).desc;
  s = graph::write_safetensors(out_dir + "/model.safetensors", ckpt->tensors(),
                               {{"source", ckpt_path}, {"format", "headwise"}});
  if (!s.ok()) return fail(s);
  s = tok->save(out_dir + "/tokenizer.bin");
  if (!s.ok()) return fail(s);
  const std::string json = graph::description_to_json(desc, "model.safetensors", "tokenizer.bin");
  const std::string json_path = out_dir + "/model.json";
  std::FILE* f = std::fopen(json_path.c_str(), "wb");
  if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size() || std::fclose(f) != 0)
    return fail(io_error(json_path + ": cannot write"));
  std::fprintf(stderr, "headwise convert: wrote %s/{model.json, model.safetensors, tokenizer.bin}\n",
               out_dir.c_str());
  return 0;
}

}  // namespace headwise::tools
