// headwise tokenize — the token ids of a text, as the model's own tokenizer gives them:
// one line of ids separated by single spaces, or with --json {"ids": [...], "pieces":
// [...]}. MODEL is a GGUF file (a whole model or a vocabulary alone), a tokenizer.json
// (its tokenizer_config.json beside it is read), a Hugging Face folder, or anything
// `headwise run` loads (model.json, a llama2.c checkpoint with --tokenizer).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "graph/input_file.hpp"
#include "formats/gguf.hpp"
#include "headwise/model.hpp"
#include "headwise/tokenizer.hpp"
#include "runtime/tokenizer_load.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"

namespace headwise::tools {
namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
      "usage: headwise tokenize MODEL (--text TEXT | --file FILE) [options]\n"
      "  MODEL            a .gguf file (a model or a vocabulary alone), a tokenizer.json,\n"
      "                   a Hugging Face folder, or what 'headwise run' loads\n"
      "  --text TEXT      the text to tokenize\n"
      "  --file FILE      tokenize FILE's bytes exactly as they are\n"
      "  --no-special     add nothing (by default, what the tokenizer's configuration adds:\n"
      "                   BOS for Llama, nothing for GPT-2 or Qwen)\n"
      "  --parse-special  text spelling a special token (<s>, <|im_start|>) becomes that\n"
      "                   token; by default it is plain text\n"
      "  --json           print {\"ids\": [...], \"pieces\": [...]} instead of the ids\n"
      "  --tokenizer FILE the tokenizer.bin of a llama2.c checkpoint\n");
}

int fail(const Status& s) {
  std::fprintf(stderr, "headwise tokenize: %s\n", s.message().c_str());
  return 1;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool has_suffix(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

bool starts_with_gguf_magic(const std::string& path) {
  if (!graph::check_input_file(path, "model").ok()) return false;  // never block on a FIFO
  std::ifstream f(path, std::ios::binary);
  char m[4] = {};
  return f.read(m, 4) && std::string(m, 4) == "GGUF";
}

// The tokenizer of MODEL; `model` keeps a loaded Model alive when it owns it.
Status load_tokenizer(const std::string& path, const std::string& tokenizer_bin, std::unique_ptr<Tokenizer>* own,
                      std::shared_ptr<const Model>* model, const Tokenizer** tok) {
  if (starts_with_gguf_magic(path)) {
    std::unique_ptr<formats::GgufFile> g;
    HW_RETURN_IF_ERROR(formats::GgufFile::open(path, &g));
    HW_RETURN_IF_ERROR(tokenizer_from_gguf(*g, own));
  } else if (has_suffix(path, ".json") && !has_suffix(path, "model.json")) {
    HW_RETURN_IF_ERROR(tokenizer_from_hf(path, own));
  } else if (is_dir(path) && std::ifstream(path + "/tokenizer.json")) {
    HW_RETURN_IF_ERROR(tokenizer_from_hf(path + "/tokenizer.json", own));
  } else {
    ModelOptions mo;
    mo.tokenizer = tokenizer_bin;
    HW_RETURN_IF_ERROR(Model::load(path, mo, model));
    if (!(*model)->tokenizer())
      return invalid_argument(path + ": no tokenizer; give one with --tokenizer FILE");
    *tok = (*model)->tokenizer();
    return Status::Ok();
  }
  *tok = own->get();
  return Status::Ok();
}

// A JSON string literal; bytes that are not UTF-8 become U+FFFD.
std::string json_string(const std::string& s) {
  Utf8Stream u;
  const std::string text = u.push(s) + u.finish();
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(char(c));
    }
  }
  return out + "\"";
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help", "no-special", "parse-special", "json"}, {"text", "file", "tokenizer"})) {
    std::fprintf(stderr, "headwise tokenize: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  if (a.positional().size() != 1) {
    std::fprintf(stderr, "headwise tokenize: give one MODEL, got %zu\n", a.positional().size());
    usage(stderr);
    return 2;
  }
  if (a.has("text") == a.has("file")) {
    std::fprintf(stderr, "headwise tokenize: give --text TEXT or --file FILE (one of them)\n");
    return 2;
  }
  std::string text;
  if (a.has("text")) {
    text = a.str("text");
  } else {
    const std::string path = a.str("file");
    // Regular files only (a FIFO would block, /dev/zero never ends), at most 256 MiB.
    if (Status s = graph::read_input_file(path, "--file", uint64_t(256) << 20, &text); !s.ok()) return fail(s);
  }

  std::unique_ptr<Tokenizer> own;
  std::shared_ptr<const Model> model;
  const Tokenizer* tok = nullptr;
  const Status s = load_tokenizer(a.positional()[0], a.str("tokenizer"), &own, &model, &tok);
  if (!s.ok()) return fail(s);

  EncodeOptions eo;
  eo.add_special = !a.has("no-special");
  eo.parse_special = a.has("parse-special");
  const std::vector<int32_t> ids = tok->encode(text, eo);

  std::string out;
  if (a.has("json")) {
    out = "{\"ids\": [";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
    out += "], \"pieces\": [";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + json_string(tok->piece(ids[i]));
    out += "]}";
  } else {
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  }
  out += "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace headwise::tools
