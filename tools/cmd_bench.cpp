// headwise bench: dispatches to the attention kernel benchmark or the model benchmark.
#include <cstring>

#include "tools/commands.hpp"

namespace headwise::tools {

int cmd_bench_attention(int argc, char** argv);
int cmd_bench_model(int argc, char** argv);

int cmd_bench(int argc, char** argv) {
  if (argc >= 1 && std::strcmp(argv[0], "attention") == 0)
    return cmd_bench_attention(argc - 1, argv + 1);
  return cmd_bench_model(argc, argv);  // MODEL|--synthetic NAME (and --help)
}

}  // namespace headwise::tools
