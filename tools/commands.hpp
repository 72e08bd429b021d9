// The headwise subcommands. Each lives in its own file (cmd_<name>.cpp), receives the
// arguments after its name, prints results to stdout and diagnostics to stderr, and
// returns the process exit code (0 ok, 1 runtime error, 2 usage error).
#pragma once

namespace headwise::tools {

int cmd_bench(int argc, char** argv);    // bench attention ... | bench MODEL|--synthetic NAME
int cmd_run(int argc, char** argv);      // run MODEL: generate text
int cmd_convert(int argc, char** argv);  // convert llama2c CKPT.bin --tokenizer TOK.bin -o DIR
int cmd_maps(int argc, char** argv);     // maps MODEL: attention maps as HTML (+ PNGs)
int cmd_heads(int argc, char** argv);    // heads MODEL: head roles and ablation
int cmd_tokenize(int argc, char** argv); // tokenize MODEL --text TEXT: token ids
int cmd_serve(int argc, char** argv);    // serve MODEL: OpenAI-compatible HTTP server

}  // namespace headwise::tools
