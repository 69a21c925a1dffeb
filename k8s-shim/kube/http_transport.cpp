#include "k8s-shim/kube/http_transport.h"

#include <curl/curl.h>

#include <fstream>
#include <sstream>
#include <system_error>

namespace shim::kube {

namespace {

struct EasyDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using EasyPtr = std::unique_ptr<CURL, EasyDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

// Where the write callback collects the body, and why it stopped taking it.
struct BodySink {
  std::string body;
  std::size_t limit = 0;
  bool overflowed = false;
};

std::size_t collect_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  std::size_t bytes = size * count;
  if (sink->body.size() + bytes > sink->limit) {
    sink->overflowed = true;
    return 0;  // anything but `bytes` makes libcurl abort with CURLE_WRITE_ERROR
  }
  sink->body.append(data, bytes);
  return bytes;
}

// The token file's content without the trailing newline editors and tools add.
std::string trim_token(std::string token) {
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
    token.pop_back();
  return token;
}

}  // namespace

struct CurlTransport::Handle {
  EasyPtr curl;
};

xpu::Result<std::unique_ptr<CurlTransport>> CurlTransport::create(KubeApiConfig config,
                                                                  std::size_t max_response_bytes) {
  if (!config.server.starts_with("https://") && !config.server.starts_with("http://"))
    return xpu::Error{"API server URL must start with https:// or http://: \"" + config.server +
                      "\""};
  while (config.server.ends_with('/')) config.server.pop_back();
  // curl_easy_init runs curl_global_init on first use when the program did not.
  EasyPtr curl(curl_easy_init());
  if (!curl) return xpu::Error{"curl_easy_init failed"};
  auto handle = std::make_unique<Handle>(Handle{std::move(curl)});
  return std::unique_ptr<CurlTransport>(
      new CurlTransport(std::move(config), max_response_bytes, std::move(handle)));
}

CurlTransport::CurlTransport(KubeApiConfig config, std::size_t max_response_bytes,
                             std::unique_ptr<Handle> handle)
    : config_(std::move(config)),
      max_response_bytes_(max_response_bytes),
      handle_(std::move(handle)) {}

CurlTransport::~CurlTransport() = default;

xpu::Result<std::string> CurlTransport::bearer_token() {
  if (config_.token_file.empty()) return std::string();
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(config_.token_file, ec);
  if (ec)
    return xpu::Error{"cannot read the token " + config_.token_file.string() + ": " + ec.message()};
  // The kubelet replaces the projected token atomically (a symlink swap), so a new mtime means a
  // new token; an unchanged one saves reading the file per request.
  if (!token_.empty() && mtime == token_mtime_) return token_;
  std::ifstream in(config_.token_file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return xpu::Error{"cannot read the token " + config_.token_file.string()};
  std::string token = trim_token(text.str());
  if (token.empty()) return xpu::Error{"the token " + config_.token_file.string() + " is empty"};
  if (token.find_first_of("\r\n") != std::string::npos)
    return xpu::Error{"the token " + config_.token_file.string() + " spans several lines"};
  token_ = std::move(token);
  token_mtime_ = mtime;
  return token_;
}

xpu::Result<HttpResponse> CurlTransport::send(const HttpRequest& request) {
  std::lock_guard lock(mutex_);
  const std::string url = config_.server + request.target;
  auto where = [&] { return request.method + " " + url; };

  auto token = bearer_token();
  if (!token) return xpu::Error{where() + ": " + token.error()};

  SlistPtr headers;
  auto add_header = [&](const std::string& line) -> bool {
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (!grown) return false;
    (void)headers.release();  // `grown` is the same list, now one longer
    headers.reset(grown);
    return true;
  };
  bool headers_ok = add_header("Accept: application/json");
  if (!request.body.empty())
    headers_ok = headers_ok && add_header("Content-Type: " + (request.content_type.empty()
                                                                  ? std::string("application/json")
                                                                  : request.content_type));
  if (!token->empty()) headers_ok = headers_ok && add_header("Authorization: Bearer " + *token);
  // libcurl would send "Expect: 100-continue" for big bodies and wait for the server's go.
  headers_ok = headers_ok && add_header("Expect:");
  if (!headers_ok) return xpu::Error{where() + ": out of memory building the headers"};

  CURL* curl = handle_->curl.get();
  curl_easy_reset(curl);  // nothing of the previous request's options carries over
  BodySink sink;
  sink.limit = max_response_bytes_;
  char curl_error[CURL_ERROR_SIZE] = {};

  bool https = url.starts_with("https://");
  auto set = [&](CURLcode code) { return code == CURLE_OK; };
  bool options_ok =
      set(curl_easy_setopt(curl, CURLOPT_URL, url.c_str())) &&
      set(curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str())) &&
      set(curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get())) &&
      set(curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &collect_body)) &&
      set(curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink)) &&
      set(curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error)) &&
      set(curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L)) &&
      set(curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L)) &&
      set(curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.timeout.count()))) &&
      set(curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, https ? "https" : "http")) &&
      set(curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
                           static_cast<curl_off_t>(max_response_bytes_)));
  if (https && options_ok) {
    options_ok = set(curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L)) &&
                 set(curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L));
    if (options_ok && !config_.ca_file.empty())
      options_ok = set(curl_easy_setopt(curl, CURLOPT_CAINFO, config_.ca_file.c_str()));
  }
  if (options_ok && !request.body.empty()) {
    options_ok = set(curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data())) &&
                 set(curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                                      static_cast<curl_off_t>(request.body.size())));
  }
  if (!options_ok) return xpu::Error{where() + ": libcurl refused an option"};

  CURLcode code = curl_easy_perform(curl);
  if (sink.overflowed || code == CURLE_FILESIZE_EXCEEDED)
    return xpu::Error{where() + ": answer larger than " + std::to_string(max_response_bytes_) +
                      " bytes, transfer aborted"};
  if (code != CURLE_OK) {
    std::string detail = curl_error[0] != '\0' ? curl_error : curl_easy_strerror(code);
    return xpu::Error{where() + ": " + detail};
  }
  HttpResponse response;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  response.body = std::move(sink.body);
  return response;
}

}  // namespace shim::kube
