#include "k8s-shim/token_sync/api_server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "common/command_line.h"
#include "k8s-shim/printable.h"

namespace shim::token_sync {
namespace {

xpu::Error host_error(std::string_view host, std::string_view why) {
  return xpu::Error{std::string(kServiceHostVariable) + "='" + printable_excerpt(host) + "' " +
                    std::string(why)};
}

bool is_dns_label(std::string_view label) {
  if (label.empty() || label.size() > 63) return false;
  if (label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool is_dns_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    if (!is_dns_label(name.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool looks_like_ipv4(std::string_view host) {
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// The host as it goes into a URL authority.
xpu::Result<std::string> url_host(std::string_view host) {
  if (host.empty()) return host_error(host, "is empty");
  if (!std::all_of(host.begin(), host.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return host_error(host, "contains a space, control or non-ASCII character");
  std::string_view inner = host;
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) inner = host.substr(1, host.size() - 2);
  if (bracketed || inner.find(':') != std::string_view::npos) {
    if (inner.find('%') != std::string_view::npos)
      return host_error(host, "has an IPv6 zone index, which an API server address cannot use");
    in6_addr address{};
    if (inet_pton(AF_INET6, std::string(inner).c_str(), &address) != 1)
      return host_error(host, "is not a valid IPv6 address");
    return "[" + std::string(inner) + "]";
  }
  if (looks_like_ipv4(host)) {
    in_addr address{};
    if (inet_pton(AF_INET, std::string(host).c_str(), &address) != 1)
      return host_error(host, "is not a valid IPv4 address");
    return std::string(host);
  }
  if (!is_dns_name(host)) return host_error(host, "is neither an IP address nor a valid DNS name");
  return std::string(host);
}

}  // namespace

ApiServerEnvironment ApiServerEnvironment::from_process_environment() {
  ApiServerEnvironment environment;
  if (const char* host = std::getenv(kServiceHostVariable)) environment.host = host;
  if (const char* port = std::getenv(kServicePortVariable)) environment.port = port;
  return environment;
}

xpu::Result<std::string> api_server_url(const ApiServerEnvironment& environment) {
  if (!environment.host)
    return xpu::Error{std::string(kServiceHostVariable) +
                      " is not set (it names the API server; the kubelet sets it in every pod)"};
  if (!environment.port)
    return xpu::Error{
        std::string(kServicePortVariable) +
        " is not set (it names the API server port; the kubelet sets it in every pod)"};
  auto host = url_host(*environment.host);
  if (!host) return xpu::Error{host.error()};
  auto port = xpu::parse_uint(*environment.port, 1, 65535);
  if (!port)
    return xpu::Error{std::string(kServicePortVariable) + "='" +
                      printable_excerpt(*environment.port) + "' is not a port number 1-65535"};
  return "https://" + *host + ":" + std::to_string(*port);
}

}  // namespace shim::token_sync
