#include "k8s-shim/kube/api_call.h"

namespace shim::kube {

ApiResult<std::string> call(HttpTransport& transport, std::string method, std::string target,
                            std::string body, std::string content_type) {
  HttpRequest request{.method = std::move(method),
                      .target = std::move(target),
                      .body = std::move(body),
                      .content_type = std::move(content_type)};
  auto response = transport.send(request);
  if (!response) return ApiError{.code = 0, .reason = "", .message = response.error()};
  if (response->status < 200 || response->status > 299)
    return api_error_from_response(request.method, request.target, *response);
  return std::move(response->body);
}

}  // namespace shim::kube
