// The headwise subcommands. Each lives in its own file (cmd_<name>.cpp), receives the
// arguments after its name, prints results to stdout and diagnostics to stderr, and
// returns the process exit code (0 ok, 1 runtime error, 2 usage error).
#pragma once

namespace headwise::tools {

int cmd_bench(int argc, char** argv);  // bench attention ... | bench MODEL|--synthetic NAME

}  // namespace headwise::tools
