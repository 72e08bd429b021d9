// Helpers the hostile-input tests share: a temporary folder per test, writing bytes to
// a file, and checking that a failed Status names its culprit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "headwise/status.hpp"

namespace headwise::test {

// A folder under the system's temporary directory, named after the process and the
// running test, removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "headwise-test") {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    static int serial = 0;  // tells apart two folders of one test
    std::string name = prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + "-" +
                       (info ? std::string(info->test_suite_name()) + "-" + info->name() : "none");
    for (char& c : name) c = c == '/' ? '_' : c;  // parameterised test names hold '/'
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// Writes `bytes` as the whole content of `path`.
inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// `s` failed, and its message holds every one of `words` (the file, field, option...).
inline void expect_names(const Status& s, std::initializer_list<std::string> words) {
  ASSERT_FALSE(s.ok());
  for (const std::string& w : words) EXPECT_NE(s.message().find(w), std::string::npos) << s.message();
}

// The resident bytes (smaps "Rss") of this process's mapping that holds `addr`; -1 when
// no mapping holds it. Used to check that a plan drops the mapped pages it copied.
inline int64_t resident_bytes_of_mapping(const void* addr) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0;
    char dash = 0;
    // A mapping's first line starts "lo-hi perms ..."; its fields follow ("Rss:  12 kB").
    if (std::sscanf(line.c_str(), "%llx%c%llx", &lo, &dash, &hi) == 3 && dash == '-') {
      inside = a >= lo && a < hi;
      continue;
    }
    long long kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %lld kB", &kb) == 1) return kb * 1024;
  }
  return -1;
}

}  // namespace headwise::test
