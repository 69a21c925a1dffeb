#include "k8s-shim/exporter/listen_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace shim::exporter {
namespace {

xpu::Error failed(const ListenAddress& address, std::string_view step, int error) {
  return xpu::Error{"cannot listen on " + address.to_string() + ": " + std::string(step) + ": " +
                    std::strerror(error)};
}

xpu::Result<ListenSocket> bind_and_listen(const ListenAddress& address, int family,
                                          const sockaddr* where, socklen_t length, bool dual,
                                          int backlog) {
  xpu::UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return failed(address, "socket", errno);
  const int on = 1;
  // A restarted exporter binds again while the old connections sit in TIME_WAIT.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (family == AF_INET6) {
    // Set either way: the host's net.ipv6.bindv6only default must not decide for us.
    const int v6only = dual ? 0 : 1;
    if (::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) != 0)
      return failed(address, "IPV6_V6ONLY", errno);
  }
  if (::bind(fd.get(), where, length) != 0) return failed(address, "bind", errno);
  if (::listen(fd.get(), backlog) != 0) return failed(address, "listen", errno);

  sockaddr_storage bound{};
  socklen_t bound_length = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0)
    return failed(address, "getsockname", errno);
  const std::uint16_t port = bound.ss_family == AF_INET6
                                 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                 : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return ListenSocket{std::move(fd), port};
}

xpu::Result<ListenSocket> open_ipv4(const ListenAddress& address, in_addr host, int backlog) {
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(address.port);
  where.sin_addr = host;
  return bind_and_listen(address, AF_INET, reinterpret_cast<sockaddr*>(&where), sizeof where, false,
                         backlog);
}

xpu::Result<ListenSocket> open_ipv6(const ListenAddress& address, const in6_addr& host,
                                    int backlog) {
  sockaddr_in6 where{};
  where.sin6_family = AF_INET6;
  where.sin6_port = htons(address.port);
  where.sin6_addr = host;
  return bind_and_listen(address, AF_INET6, reinterpret_cast<sockaddr*>(&where), sizeof where,
                         IN6_IS_ADDR_UNSPECIFIED(&host), backlog);
}

}  // namespace

xpu::Result<ListenSocket> open_listen_socket(const ListenAddress& address, int backlog) {
  switch (address.family) {
    case ListenAddress::Family::IPv4: {
      in_addr host{};
      if (inet_pton(AF_INET, address.host.c_str(), &host) != 1)
        return xpu::Error{"cannot listen on " + address.to_string() + ": not an IPv4 address"};
      return open_ipv4(address, host, backlog);
    }
    case ListenAddress::Family::IPv6: {
      in6_addr host{};
      if (inet_pton(AF_INET6, address.host.c_str(), &host) != 1)
        return xpu::Error{"cannot listen on " + address.to_string() + ": not an IPv6 address"};
      return open_ipv6(address, host, backlog);
    }
    case ListenAddress::Family::Any:
      break;
  }
  auto dual = open_ipv6(address, in6addr_any, backlog);
  if (dual) return dual;
  // A kernel booted with ipv6.disable=1 has no AF_INET6 at all; IPv4 is then all there is.
  xpu::UniqueFd probe(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (probe.valid()) return dual;
  in_addr any{};
  any.s_addr = htonl(INADDR_ANY);
  return open_ipv4(address, any, backlog);
}

}  // namespace shim::exporter
