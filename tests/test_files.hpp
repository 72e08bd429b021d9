// Helpers the hostile-input tests share: a temporary folder per test, writing bytes to
// a file, and checking that a failed Status names its culprit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace headwise::test
