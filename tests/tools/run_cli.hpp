// Running the built `headwise` command line from a test: exit code, stdout and stderr
// captured apart. Shared by the tools tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace headwise::test {

inline const std::string kHeadwise = HEADWISE_BINARY_DIR "/headwise";

struct CliResult {
  int code = -1;  // exit status; -1 when the process did not exit normally
  std::string out, err;
};

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs a shell command line, capturing its stdout and stderr.
inline CliResult run_shell(const std::string& command) {
  CliResult r;
  std::string err_path = ::testing::TempDir() + "headwise_cli_stderr_XXXXXX";
  const int fd = mkstemp(err_path.data());
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return r;
  }
  close(fd);
  if (FILE* p = popen(("(" + command + ") 2>'" + err_path + "'").c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  r.err = read_file(err_path);
  std::remove(err_path.c_str());
  return r;
}

// Runs `env headwise args` (env: optional VAR=value assignments).
inline CliResult run_headwise(const std::string& args, const std::string& env = "") {
  if (access(kHeadwise.c_str(), X_OK) != 0) {
    ADD_FAILURE() << kHeadwise << " is missing: build the headwise target first";
    return {};
  }
  return run_shell(env + " '" + kHeadwise + "' " + args);
}

}  // namespace headwise::test
