#include "k8s-shim/exporter/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/command_line.h"

namespace shim::exporter {
namespace {

xpu::Error bad(std::string_view text, std::string_view why) {
  return xpu::Error{"'" + std::string(text) + "': " + std::string(why) +
                    " (expected HOST:PORT, [IPV6]:PORT or :PORT)"};
}

}  // namespace

std::string ListenAddress::to_string() const {
  switch (family) {
    case Family::Any:
      break;
    case Family::IPv4:
      return host + ":" + std::to_string(port);
    case Family::IPv6:
      return "[" + host + "]:" + std::to_string(port);
  }
  return ":" + std::to_string(port);
}

xpu::Result<ListenAddress> parse_listen_address(std::string_view text) {
  if (text.empty()) return bad(text, "empty address");
  ListenAddress address;
  std::string_view port_text;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "missing ']' after the IPv6 address");
    if (close + 1 >= text.size() || text[close + 1] != ':')
      return bad(text, "missing ':PORT' after the IPv6 address");
    address.host = std::string(text.substr(1, close - 1));
    in6_addr parsed{};
    if (address.host.empty() || inet_pton(AF_INET6, address.host.c_str(), &parsed) != 1)
      return bad(text, "'" + address.host + "' is not an IPv6 address");
    address.family = ListenAddress::Family::IPv6;
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad(text, "missing ':PORT'");
    std::string_view host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos)
      return bad(text, "an IPv6 address must be written in brackets");
    if (!host.empty()) {
      address.host = std::string(host);
      in_addr parsed{};
      if (inet_pton(AF_INET, address.host.c_str(), &parsed) != 1)
        return bad(text,
                   "'" + address.host + "' is not an IPv4 address (host names are not resolved)");
      address.family = ListenAddress::Family::IPv4;
    }
    port_text = text.substr(colon + 1);
  }
  if (port_text.empty()) return bad(text, "missing port");
  auto port = xpu::parse_uint(port_text, 0, 65535);
  if (!port) return bad(text, "port " + port.error());
  address.port = static_cast<std::uint16_t>(*port);
  return address;
}

}  // namespace shim::exporter
