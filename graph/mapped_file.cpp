// MappedFile: a whole file mapped read-only. Weights are used in place from the page
// cache instead of being copied, as llama2.c's read_checkpoint does.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graph/input_file.hpp"
#include "graph/weights.hpp"

namespace headwise::graph {

Status MappedFile::open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  if (out == nullptr) return invalid_argument("MappedFile::open(" + path + "): out is null");
  out->reset();

  // open() then fstat() on the descriptor: the checks and the mapping see the same
  // file even if the path is replaced meanwhile. Only regular files: a FIFO or a
  // device has no size to map (and opening a FIFO would wait for a writer).
  int fd = -1;
  uint64_t size = 0;
  HW_RETURN_IF_ERROR(open_input_file(path, "weights file", &fd, &size));

  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(size);
  if (file->size_ > 0) {  // mmap rejects a length of 0; an empty file maps to nothing
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return io_error(path + ": cannot map " + std::to_string(file->size_) +
                      " bytes: " + std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  *out = std::move(file);
  return Status::Ok();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace headwise::graph
