// OpenAI-style errors: an HTTP status and {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

namespace headwise::server {

struct ApiError {
  int status = 0;             // 0: no error
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;          // the request field at fault, "" if none
  std::string code;           // e.g. "model_not_found", "context_length_exceeded"
  explicit operator bool() const { return status != 0; }
};

inline ApiError bad_request(std::string message, std::string param = "", std::string code = "") {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

// The JSON body of an error.
std::string error_body(const ApiError& e);

}  // namespace headwise::server
