// A minimal HTTP/1.1 client for tests: one request per connection, bounded by a deadline, so the
// tests see exactly what a scraper would (status, headers, body) and can also send broken bytes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/unique_fd.h"

namespace shim::exporter::testing {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string raw;
};

// `host` is a literal IPv4 or IPv6 address.
inline xpu::UniqueFd connect_to(const std::string& host, std::uint16_t port,
                                std::chrono::milliseconds timeout) {
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof *v6;
  } else {
    return {};
  }
  xpu::UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) return {};
  return fd;
}

inline xpu::UniqueFd connect_local(std::uint16_t port, std::chrono::milliseconds timeout) {
  return connect_to("127.0.0.1", port, timeout);
}

inline bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads until the server closes the connection or the receive timeout passes.
inline std::string read_all(int fd) {
  std::string data;
  char buffer[65536];
  while (true) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  return data;
}

inline std::optional<HttpReply> parse_reply(const std::string& raw) {
  HttpReply reply;
  reply.raw = raw;
  auto head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return std::nullopt;
  reply.status = std::stoi(raw.substr(9, 3));
  size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    size_t end = raw.find("\r\n", pos);
    std::string line = raw.substr(pos, end - pos);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t value_start = line.find_first_not_of(' ', colon + 1);
      reply.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
    }
    pos = end + 2;
  }
  reply.body = raw.substr(head_end + 4);
  return reply;
}

// Sends `request` as is and parses whatever comes back (nullopt: no HTTP reply at all).
inline std::optional<HttpReply> send_request_to(
    const std::string& host, std::uint16_t port, const std::string& request,
    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto fd = connect_to(host, port, timeout);
  if (!fd.valid()) return std::nullopt;
  if (!send_all(fd.get(), request)) return std::nullopt;
  return parse_reply(read_all(fd.get()));
}

inline std::optional<HttpReply> send_request(
    std::uint16_t port, const std::string& request,
    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return send_request_to("127.0.0.1", port, request, timeout);
}

inline std::optional<HttpReply> http_request(std::uint16_t port, const std::string& method,
                                             const std::string& path) {
  return send_request(
      port, method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

}  // namespace shim::exporter::testing
