// headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o DIR
// Writes DIR/model.json (the Llama description), DIR/model.safetensors (the tensors,
// f32, Meta Llama names) and DIR/tokenizer.bin.
// headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o OUT.gguf [--weights TYPE]
// headwise convert MODEL.gguf|HF_DIR --weights TYPE -o OUT.gguf [--vocab VOCAB.gguf]
// Writes a GGUF file (llama.cpp's conventions, so llama.cpp runs it too), its weight
// matrices in TYPE (formats/quantize_gguf.hpp says which tensor gets which type).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "formats/checkpoint.hpp"
#include "formats/hf_to_gguf.hpp"
#include "formats/llama2c_to_gguf.hpp"
#include "formats/quantize_gguf.hpp"
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
               "  (DIR is created if needed; existing files there are replaced)\n"
               "       headwise convert llama2c CKPT.bin --tokenizer TOK.bin -o OUT.gguf [--weights TYPE]\n"
               "       headwise convert MODEL.gguf|HF_DIR --weights TYPE -o OUT.gguf [--vocab VOCAB.gguf]\n"
               "  writes a GGUF file in llama.cpp's conventions; --weights TYPE (%s)\n"
               "  stores the weight matrices in TYPE (norms stay f32; rows that do not fit a\n"
               "  type's block fall back to q8_0, q4_0 (q2_k, q3_k) or f16; 2- to 5-bit types keep\n"
               "  the output matrix in q6_k; q4_k_m/q5_k_m: q6_k for half the layers'\n"
               "  attn_v/ffn_down; q3_k_m: q4_k/q5_k for attn_v, ffn_down, attn_output;\n"
               "  iq4_xs: q5_k for attn_v under grouped-query attention and early ffn_down;\n"
               "  q2_k: q3_k/q4_k for attn_v, ffn_down, attn_output);\n"
               "  --vocab adds a vocabulary GGUF's tokenizer to a Hugging Face folder's file\n",
               formats::weight_mixes_help());
}

int fail(const Status& s) {
  std::fprintf(stderr, "headwise convert: %s\n", s.message().c_str());
  return 1;
}

std::string stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  return base.substr(0, base.find_last_of('.'));
}

// --weights TYPE: quantize `src` (a GGUF file) into `out`, printing each tensor's type.
int quantize(const std::string& src, const std::string& mix, const std::string& out, int threads) {
  std::unique_ptr<formats::GgufFile> in;
  Status s = formats::GgufFile::open(src, &in);
  if (!s.ok()) return fail(s);
  formats::QuantizeReport rep;
  s = formats::quantize_gguf(*in, mix, out, threads, &rep);
  if (!s.ok()) return fail(s);
  for (const auto& l : rep.tensors)
    if (l.from != l.to || !l.why.empty())
      std::fprintf(stderr, "  %-28s %-5s -> %-5s %s\n", l.name.c_str(), l.from.c_str(), l.to.c_str(), l.why.c_str());
  std::fprintf(stderr, "headwise convert: wrote %s (%s weights: %.1f MB from %.1f MB)\n", out.c_str(), mix.c_str(),
               rep.bytes_out / 1e6, rep.bytes_in / 1e6);
  return 0;
}

int convert_gguf(Args& a, const std::string& out) {
  const std::string mix = a.str("weights");
  if (out.empty() || a.positional().empty() || (a.has("weights") && !formats::valid_weight_mix(mix))) {
    if (a.has("weights") && !formats::valid_weight_mix(mix))
      std::fprintf(stderr, "headwise convert: --weights '%s' is not one of %s\n", mix.c_str(),
                   formats::weight_mixes_help());
    usage(stderr);
    return 2;
  }
  const long long threads = a.integer("threads", 0);
  if (!a.ok() || threads < 0 || threads > 4096) {
    std::fprintf(stderr, "headwise convert: %s\n", a.ok() ? "--threads must be in 0..4096" : a.error().c_str());
    return 2;
  }
  // A GGUF source is quantized directly; others are first written as an f32 GGUF.
  const std::string tmp = out + ".f32.tmp";
  std::string src;
  Status s;
  if (a.positional()[0] == "llama2c") {
    if (a.positional().size() != 2 || !a.has("tokenizer")) {
      usage(stderr);
      return 2;
    }
    std::unique_ptr<graph::Llama2cCheckpoint> ckpt;
    s = graph::Llama2cCheckpoint::open(a.positional()[1], &ckpt);
    if (!s.ok()) return fail(s);
    std::unique_ptr<Tokenizer> tok;
    s = Tokenizer::load(a.str("tokenizer"), ckpt->config().vocab_size, &tok);
    if (!s.ok()) return fail(s);
    src = a.has("weights") ? tmp : out;
    s = formats::convert_llama2c_to_gguf(*ckpt, *tok, src);
  } else if (a.positional().size() != 1) {
    usage(stderr);
    return 2;
  } else if (formats::is_gguf(a.positional()[0])) {
    if (!a.has("weights")) {
      std::fprintf(stderr, "headwise convert: a GGUF source needs --weights TYPE\n");
      return 2;
    }
    return quantize(a.positional()[0], mix, out, int(threads));
  } else if (formats::is_hf_folder(a.positional()[0])) {
    std::unique_ptr<formats::GgufFile> vocab;
    if (a.has("vocab")) {
      s = formats::GgufFile::open(a.str("vocab"), &vocab);
      if (!s.ok()) return fail(s);
    }
    src = a.has("weights") ? tmp : out;
    s = formats::convert_hf_to_gguf(a.positional()[0], vocab.get(), src);
  } else {
    std::fprintf(stderr, "headwise convert: %s is neither a GGUF file nor a Hugging Face folder (config.json)\n",
                 a.positional()[0].c_str());
    return 1;
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return fail(s);
  }
  if (!a.has("weights")) {
    std::fprintf(stderr, "headwise convert: wrote %s\n", out.c_str());
    return 0;
  }
  const int rc = quantize(tmp, mix, out, int(threads));
  ::unlink(tmp.c_str());
  return rc;
}

}  // namespace

int cmd_convert(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help"}, {"tokenizer", "o", "output", "weights", "vocab", "threads"})) {
    std::fprintf(stderr, "headwise convert: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  const std::string out_dir = a.has("o") ? a.str("o") : a.str("output");
  const bool to_gguf = out_dir.size() > 5 && out_dir.compare(out_dir.size() - 5, 5, ".gguf") == 0;
  if (to_gguf || a.has("weights")) return convert_gguf(a, out_dir);
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
