#include "k8s-shim/kube/api_error.h"

#include <nlohmann/json.hpp>

namespace shim::kube {

namespace {

// A body that is not a Status (a proxy's HTML page...) is quoted only so far: enough to recognise,
// not enough to flood the log.
constexpr std::size_t kQuotedBodyLimit = 200;

}  // namespace

ApiError api_error_from_response(std::string_view method, std::string_view target,
                                 const HttpResponse& response) {
  ApiError error;
  error.code = response.status;
  std::string detail;
  auto status = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    if (auto it = status.find("reason"); it != status.end() && it->is_string())
      error.reason = it->get<std::string>();
    if (auto it = status.find("message"); it != status.end() && it->is_string())
      detail = it->get<std::string>();
    // The Status' own code wins: it is what the API meant, whatever a proxy made of the status.
    if (auto it = status.find("code"); it != status.end() && it->is_number_integer())
      error.code = it->get<long>();
  }
  if (detail.empty()) {
    detail = response.body.substr(0, kQuotedBodyLimit);
    if (response.body.size() > kQuotedBodyLimit) detail += "...";
  }
  error.message = std::string(method) + " " + std::string(target) + ": " +
                  std::to_string(error.code) + (error.reason.empty() ? "" : " " + error.reason) +
                  ": " + detail;
  return error;
}

}  // namespace shim::kube
