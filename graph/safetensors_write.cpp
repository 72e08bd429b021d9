// write_safetensors: header JSON padded with spaces to a multiple of 8 bytes and every
// tensor's data starting on an 8-byte boundary, so a reader that maps the file gets
// aligned views. The file is written under a temporary name in the same directory
// and renamed into place: a reader never sees a half-written file, and a failed write
// leaves the previous file untouched.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/weights.hpp"

namespace headwise::graph {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr uint64_t kAlign = 8;
uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Status check_tensor(const std::string& path, const TensorView& t) {
  const std::string at = path + ": tensor '" + t.name + "': ";
  if (t.name == "__metadata__") return invalid_argument(at + "name is reserved for metadata");
  uint64_t want = dtype_size(t.dtype);
  for (int64_t d : t.shape) {
    if (d < 0) return invalid_argument(at + "shape " + t.shape_str() + " has a negative dimension");
    if (__builtin_mul_overflow(want, uint64_t(d), &want))
      return invalid_argument(at + "shape " + t.shape_str() + " overflows a 64-bit size");
  }
  if (t.nbytes != want)
    return invalid_argument(at + "nbytes " + std::to_string(t.nbytes) + " but shape " +
                            t.shape_str() + " of " + dtype_name(t.dtype) + " needs " +
                            std::to_string(want));
  if (t.nbytes > 0 && t.data == nullptr) return invalid_argument(at + "data is null");
  return Status::Ok();
}

// Writes all of [p, p+n), retrying short writes and interruptions.
bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= size_t(w);
  }
  return true;
}

// A temporary file next to `path`, created exclusively so that concurrent writers
// never share one.
int create_temp(const std::string& path, std::string* tmp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const TensorView& t : tensors) {
    HW_RETURN_IF_ERROR(check_tensor(path, t));
    if (!names.insert(t.name).second)
      return invalid_argument(path + ": tensor '" + t.name + "' is listed twice");
  }

  // Header: metadata first (readers that stream the header see it early), then the
  // tensors in the caller's order with offsets relative to the data section.
  std::string header;
  std::vector<uint64_t> offsets;
  uint64_t data_size = 0;
  try {
    ordered_json h = ordered_json::object();
    if (!metadata.empty()) {
      ordered_json m = ordered_json::object();
      for (const auto& [k, v] : metadata) m[k] = v;
      h["__metadata__"] = std::move(m);
    }
    for (const TensorView& t : tensors) {
      const uint64_t begin = align_up(data_size);
      offsets.push_back(begin);
      data_size = begin + t.nbytes;
      h[t.name] = {{"dtype", dtype_name(t.dtype)},
                   {"shape", t.shape},
                   {"data_offsets", {begin, data_size}}};
    }
    header = h.dump();  // throws on a name or value that is not valid UTF-8
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(path + ": cannot encode the header (tensor names and metadata "
                            "must be UTF-8): " + e.what());
  }
  header.append(align_up(header.size()) - header.size(), ' ');

  std::string tmp;
  const int fd = create_temp(path, &tmp);
  if (fd < 0) {
    const int err = errno;
    return io_error(path + ": cannot create a temporary file next to it: " + std::strerror(err));
  }
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return io_error(path + ": " + what + ": " + std::strerror(err));
  };

  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(header.size()) >> (8 * i));
  if (!write_all(fd, len, 8) || !write_all(fd, header.data(), header.size()))
    return fail("cannot write the header");
  static const char zeros[kAlign] = {};
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!write_all(fd, zeros, offsets[i] - pos) ||
        !write_all(fd, tensors[i].data, tensors[i].nbytes))
      return fail("cannot write tensor '" + tensors[i].name + "'");
    pos = offsets[i] + tensors[i].nbytes;
  }
  // fsync before rename: otherwise a crash can leave the new name with no data.
  if (::fsync(fd) != 0) return fail("cannot flush");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error(path + ": cannot close the temporary file: " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error(path + ": cannot rename the temporary file into place: " +
                    std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace headwise::graph
