// MappedFile: a whole file mapped read-only. Weights are used in place from the page
// cache instead of being copied, as llama2.c's read_checkpoint does.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "graph/input_file.hpp"
#include "graph/weights.hpp"

namespace headwise::graph {
namespace {

// The live mappings (start → size), so that release_resident() advises only file-backed
// pages: MADV_DONTNEED on anonymous memory would discard its contents.
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::map<uintptr_t, size_t>& live_mappings() {
  static std::map<uintptr_t, size_t> m;
  return m;
}

}  // namespace

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
    std::lock_guard<std::mutex> lock(live_mutex());
    live_mappings()[reinterpret_cast<uintptr_t>(p)] = file->size_;
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  *out = std::move(file);
  return Status::Ok();
}

MappedFile::~MappedFile() {
  if (data_ == nullptr) return;
  std::lock_guard<std::mutex> lock(live_mutex());  // no release_resident() on it meanwhile
  live_mappings().erase(reinterpret_cast<uintptr_t>(data_));
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

// Whether [begin, end) lies inside a live mapping; the caller holds live_mutex().
bool inside_live(uintptr_t begin, uintptr_t end) {
  if (begin == 0 || end <= begin) return false;
  const auto& live = live_mappings();
  auto it = live.upper_bound(begin);
  if (it == live.begin()) return false;
  --it;  // the mapping starting at or before begin
  return end <= it->first + it->second;
}

}  // namespace

bool MappedFile::holds(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(live_mutex());
  return inside_live(begin, begin + n);
}

size_t MappedFile::release_resident(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  std::lock_guard<std::mutex> lock(live_mutex());
  if (!inside_live(begin, end)) return 0;
  // Whole pages only: a page shared with a neighbouring tensor still in use is kept.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace headwise::graph
