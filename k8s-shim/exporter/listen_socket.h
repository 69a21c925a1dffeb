// The exporter's listening socket, opened by us rather than by the HTTP library so that it
// outlives each HTTP daemon: a web-config reload starts a new daemon on the same socket, and no
// connection attempt is refused in between.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "common/unique_fd.h"
#include "k8s-shim/exporter/listen_address.h"

namespace shim::exporter {

struct ListenSocket {
  xpu::UniqueFd fd;        // bound, listening, non-blocking
  std::uint16_t port = 0;  // the bound port (the kernel's pick for port 0)
};

// ":PORT" and "[::]:PORT" listen on both families (an IPv6 socket that also takes IPv4 as
// mapped addresses); ":PORT" falls back to IPv4 alone on a host without IPv6. Any other IPv6
// address is IPv6 only. An error names the address and the cause.
xpu::Result<ListenSocket> open_listen_socket(const ListenAddress& address, int backlog = 1024);

}  // namespace shim::exporter
