// A fuzz input as a file: the readers under test take a path (they map or stream the
// file, and refuse anything but a regular file), so each input is written to an
// anonymous memory file (memfd) and handed over as /proc/self/fd/N. One memfd per
// process, rewritten for every input: no disk traffic, nothing left behind.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace headwise::fuzz {

class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  // Replaces the file's content with data[0, size).
  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Reads every byte of [p, p + n): a view that points outside its mapping faults here
// (or is reported by ASan) instead of passing unnoticed.
inline uint8_t touch(const uint8_t* p, size_t n) {
  uint8_t x = 0;
  for (size_t i = 0; i < n; ++i) x ^= p[i];
  return x;
}

}  // namespace headwise::fuzz
