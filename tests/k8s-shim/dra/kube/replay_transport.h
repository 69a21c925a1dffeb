// Test doubles for the HTTP edge: ReplayTransport answers from a queue (recorded API server
// answers, read from recorded/) and keeps the requests; recorded() reads one of those files.
#pragma once

#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "k8s-shim/kube/http_transport.h"

namespace shim::dra::testing {

inline std::string recorded(const std::string& name) {
  std::ifstream in(std::string(XPU_SOURCE_DIR) + "/tests/k8s-shim/dra/kube/recorded/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read recorded/" + name);
  return text.str();
}

class ReplayTransport : public kube::HttpTransport {
 public:
  void answer(long status, std::string body) {
    queue_.push_back(kube::HttpResponse{status, std::move(body)});
  }
  void answer_recorded(long status, const std::string& file) { answer(status, recorded(file)); }
  void fail(std::string message) { queue_.push_back(xpu::Error{std::move(message)}); }

  xpu::Result<kube::HttpResponse> send(const kube::HttpRequest& request) override {
    requests.push_back(request);
    if (queue_.empty()) return xpu::Error{"ReplayTransport: no answer queued"};
    auto next = std::move(queue_.front());
    queue_.pop_front();
    if (auto* error = std::get_if<xpu::Error>(&next)) return *error;
    return std::get<kube::HttpResponse>(std::move(next));
  }

  std::vector<kube::HttpRequest> requests;

 private:
  std::deque<std::variant<kube::HttpResponse, xpu::Error>> queue_;
};

}  // namespace shim::dra::testing
