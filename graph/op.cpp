#include "graph/op.hpp"

#include <cstring>

namespace headwise::graph {

bool parse_op(const std::string& name, OpKind* out) {
  for (int i = 0; i < static_cast<int>(OpKind::Count); ++i)
    if (name == kOpInfo[i].name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

}  // namespace headwise::graph
