// An error with its HTTP status, thrown anywhere below a route handler; the
// handler answers it in the shape of the route's protocol:
//   OpenAI:    {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
//   Anthropic: {"type": "error", "error": {"type": ..., "message": ...}}
//   Ollama:    {"error": "..."}
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace hearth::server {

enum class Protocol { OpenAI, Anthropic, Ollama };

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

  nlohmann::ordered_json body(Protocol protocol = Protocol::OpenAI) const {
    if (protocol == Protocol::Ollama) return {{"error", what()}};
    if (protocol == Protocol::Anthropic) return {{"type", "error"}, {"error", {{"type", anthropic_type()}, {"message", what()}}}};
    auto opt = [](const std::string& s) { return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s); };
    return {{"error", {{"message", what()}, {"type", type}, {"param", opt(param)}, {"code", opt(code)}}}};
  }

  // Anthropic names its error types by status.
  const char* anthropic_type() const {
    switch (status) {
      case 400: case 405: case 415: case 422: return "invalid_request_error";
      case 401: return "authentication_error";
      case 403: return "permission_error";
      case 404: return "not_found_error";
      case 413: return "request_too_large";
      case 429: return "rate_limit_error";
      case 503: case 529: return code == "model_unavailable" ? "api_error" : "overloaded_error";
      default: return "api_error";
    }
  }
};

// 400 invalid_request_error naming the offending field.
inline ApiError bad_request(const std::string& param, const std::string& message, const std::string& code = {}) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

// 499 (nginx's): the client went away before the answer; logged, never read.
inline ApiError client_closed() {
  return ApiError(499, "the client closed the request", "invalid_request_error", {},
                  "client_closed_request");
}

}  // namespace hearth::server
