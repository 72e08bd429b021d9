// headwise::Status — how graph/ and runtime/ report errors: a code and a message that
// names the file, tensor or field at fault. Nothing in the library throws or aborts.
#pragma once

#include <string>
#include <utility>

namespace headwise {

enum class StatusCode : int {
  ok = 0,
  invalid_argument = 1,  // a caller's argument is wrong (null pointer, bad shape, ...)
  not_found = 2,         // a file or tensor is missing
  io_error = 3,          // a file could not be read or written
  format_error = 4,      // a file's content is malformed (JSON, safetensors, checkpoint)
  unsupported = 5,       // valid but not supported (unknown op, dtype, ISA)
  out_of_range = 6,      // a token id, position or length is out of range
  internal = 7,
  out_of_memory = 8,     // an allocation failed (or would exceed a memory limit)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::invalid_argument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::not_found, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::io_error, std::move(m)}; }
inline Status format_error(std::string m) { return {StatusCode::format_error, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::unsupported, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::out_of_range, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {StatusCode::out_of_memory, std::move(m)}; }

// Returns early from the enclosing function when `expr` is not ok.
#define HW_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::headwise::Status hw_status_ = (expr);   \
    if (!hw_status_.ok()) return hw_status_;  \
  } while (0)

}  // namespace headwise
