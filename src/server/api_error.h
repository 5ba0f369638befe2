// An error answered in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// with its HTTP status. Thrown anywhere below a route handler; the handler
// turns it into the response.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace hearth::server {

struct ApiError : std::runtime_error {
  int status;
  std::string type, param, code;  // empty param/code are written as null

  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = {},
           std::string code = {})
      : std::runtime_error(std::move(message)),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}

  nlohmann::ordered_json body() const {
    auto opt = [](const std::string& s) { return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s); };
    return {{"error", {{"message", what()}, {"type", type}, {"param", opt(param)}, {"code", opt(code)}}}};
  }
};

// 400 invalid_request_error naming the offending field.
inline ApiError bad_request(const std::string& param, const std::string& message, const std::string& code = {}) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

}  // namespace hearth::server
