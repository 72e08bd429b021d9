// headwise — the command line: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "headwise/attention.hpp"
#include "tools/commands.hpp"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"run", headwise::tools::cmd_run, "generate text with a model (llama2.c-style output)"},
    {"convert", headwise::tools::cmd_convert,
     "convert a llama2.c checkpoint into model.json + model.safetensors + tokenizer.bin"},
    {"bench", headwise::tools::cmd_bench,
     "measure kernels and models: 'bench attention ...' | 'bench MODEL|--synthetic NAME' (see 'headwise bench --help')"},
    {"maps", headwise::tools::cmd_maps,
     "attention maps of a prompt as one self-contained HTML page (and PNGs)"},
    {"heads", headwise::tools::cmd_heads,
     "what each attention head does: previous-token/sink/local/induction scores, ablation"},
    {"tokenize", headwise::tools::cmd_tokenize, "the token ids of a text with a model's own tokenizer"},
    {"serve", headwise::tools::cmd_serve,
     "an OpenAI-compatible HTTP server (completions, chat, streaming) with continuous batching"},
};

void usage(std::FILE* f) {
  std::fprintf(f, "usage: headwise <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(f, "  %-10s %s\n", c.name, c.help);
  std::fprintf(f, "\n'headwise <command> --help' lists a command's options and defaults.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("headwise 0.1.0 (kernels: %s)\n", headwise::isa_name());
    return 0;
  }
  for (const Command& c : kCommands)
    if (cmd == c.name) {
      // The library reports errors as Status; what can still throw is an allocation
      // in the tools themselves (or a bug): a message and exit 1, never an abort.
      try {
        return c.run(argc - 2, argv + 2);
      } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "headwise %s: out of memory\n", c.name);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "headwise %s: internal error: %s\n", c.name, e.what());
      }
      return 1;
    }
  std::fprintf(stderr, "headwise: unknown command '%s'\n\n", cmd.c_str());
  usage(stderr);
  return 2;
}
