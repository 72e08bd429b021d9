// headwise bench attention — placeholder until the attention benchmark lands.
#include <cstdio>

namespace headwise::tools {
int cmd_bench_attention(int, char**) {
  std::fprintf(stderr, "headwise bench attention: not built yet\n");
  return 1;
}
}  // namespace headwise::tools
