// What a failed API call reports: enough for the caller to tell NotFound and Conflict apart
// (the publisher relists on those) and a message naming the method, the path and the server's
// reason for the log.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/result.h"
#include "k8s-shim/kube/http_transport.h"

namespace shim::kube {

struct ApiError {
  long code = 0;        // HTTP status; 0 when no answer came (transport, bad input, bad body)
  std::string reason;   // the Status object's reason ("NotFound", "Conflict"...); may be empty
  std::string message;  // for the log: method, path and what went wrong

  bool not_found() const { return code == 404; }
  bool conflict() const { return code == 409; }
};

// Like xpu::Result, but the error keeps the HTTP status and the API's reason.
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : state_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const ApiError& error() const { return std::get<ApiError>(state_); }

 private:
  std::variant<T, ApiError> state_;
};

// The error for a non-2xx answer: the Status object's message, reason and code when the body is
// one, else the HTTP status and the start of the body.
ApiError api_error_from_response(std::string_view method, std::string_view target,
                                 const HttpResponse& response);

}  // namespace shim::kube
