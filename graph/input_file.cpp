#include "graph/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace headwise::graph {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

}  // namespace

Status open_input_file(const std::string& path, const std::string& what, int* fd, uint64_t* size) {
  *fd = -1;
  if (path.empty()) return invalid_argument("the " + what + " path is empty");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  // It changes nothing for the regular files that pass the check below.
  const int f = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found(path + ": no such file (the " + what + ")");
    return io_error(path + ": cannot open the " + what + " for reading: " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(f, &st) != 0) {
    const int err = errno;
    ::close(f);
    return io_error(path + ": cannot stat the " + what + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(f);
    return io_error(path + ": is " + kind_of(st.st_mode) + ", not a regular file; the " + what +
                    " must be one");
  }
  *fd = f;
  *size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status check_input_file(const std::string& path, const std::string& what) {
  int fd;
  uint64_t size;
  HW_RETURN_IF_ERROR(open_input_file(path, what, &fd, &size));
  ::close(fd);
  return Status::Ok();
}

Status read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                       std::string* out) {
  int fd;
  uint64_t size;
  HW_RETURN_IF_ERROR(open_input_file(path, what, &fd, &size));
  if (size > max_bytes) {
    ::close(fd);
    return invalid_argument(path + ": the " + what + " is " + std::to_string(size) +
                            " bytes, more than the " + std::to_string(max_bytes) + " this reader accepts");
  }
  out->assign(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, &(*out)[done], size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return io_error(path + ": read error in the " + what + (n < 0 ? std::string(": ") + std::strerror(err) : ": file shrank"));
    }
    done += size_t(n);
  }
  ::close(fd);
  return Status::Ok();
}

}  // namespace headwise::graph
