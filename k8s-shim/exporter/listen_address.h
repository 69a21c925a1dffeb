// The exporter's --listen value: HOST:PORT, [IPV6]:PORT or :PORT.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shim::exporter {

struct ListenAddress {
  enum class Family { Any, IPv4, IPv6 };
  Family family = Family::Any;  // Any: ":PORT", every address of both families the host has
  std::string host;             // the literal address without brackets; empty for Any
  std::uint16_t port = 0;       // 0: the kernel picks a free port

  // How a user would write it back: ":9507", "127.0.0.1:9507", "[::1]:9507".
  std::string to_string() const;

  bool operator==(const ListenAddress&) const = default;
};

inline constexpr std::string_view kDefaultListen = ":9507";

// Host names are refused: the exporter binds what it is told, it never resolves names.
xpu::Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace shim::exporter
