// The HTTP edge of the API client: one request in, one answer out. KubeApi speaks the API over
// the abstract HttpTransport so that tests can replay recorded answers; CurlTransport is the real
// one (libcurl, TLS with the cluster CA, the service-account token).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "k8s-shim/kube/kube_api_config.h"

namespace shim::kube {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string target;  // path + query, already escaped: "/apis/...?fieldSelector=..."
  std::string body;    // JSON; empty: none sent
  // Of the body; empty: application/json. Server-side apply takes application/apply-patch+yaml
  // (JSON is YAML).
  std::string content_type;
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Any HTTP status is a response; an error means no complete answer came.
  virtual xpu::Result<HttpResponse> send(const HttpRequest& request) = 0;
};

// Bigger answers are refused: a list of one node's slices is a few KiB, so 16 MiB means a
// misbehaving server or a man in the middle, and must not become our memory.
inline constexpr std::size_t kMaxResponseBytes = std::size_t{16} << 20;

// libcurl easy handle reused across requests (keeps the TLS connection). send() is serialised by
// a mutex, so the transport may be shared by threads; calls then wait for each other.
class CurlTransport : public HttpTransport {
 public:
  // Fails when libcurl cannot make a handle or the server URL is not http(s)://.
  static xpu::Result<std::unique_ptr<CurlTransport>> create(
      KubeApiConfig config, std::size_t max_response_bytes = kMaxResponseBytes);
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  xpu::Result<HttpResponse> send(const HttpRequest& request) override;

 private:
  struct Handle;
  CurlTransport(KubeApiConfig config, std::size_t max_response_bytes,
                std::unique_ptr<Handle> handle);
  xpu::Result<std::string> bearer_token();

  KubeApiConfig config_;
  std::size_t max_response_bytes_;
  std::mutex mutex_;  // guards everything below: the handle is not reentrant
  std::unique_ptr<Handle> handle_;
  std::string token_;
  std::filesystem::file_time_type token_mtime_{};
};

}  // namespace shim::kube
