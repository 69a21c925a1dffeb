// How the sd-bus connection that serves one client is set up: the proxy's sessions
// (client_session.cpp) and the differential fuzzer (fuzz/api_proxy_differential_fuzzer.cpp) both
// call this, so that the fuzzer checks the inbound filter against the sd-bus the proxy runs.
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "common/unique_fd.h"

namespace xpu::api_proxy {

// A server connection on `fd` (the bus owns it from here on) that answers with `server_id`: the
// client authenticates with any uid (EXTERNAL) or anonymously, as who may connect is decided by
// the socket's place in the file system and who it is by the accepted socket's credentials
// (sd-bus sees only the socketpair); no descriptors pass. The rule by which the inbound filter
// follows the authentication (auth_exchange.h) holds for these settings. Returns 0 or a negative
// errno; sd_bus_start is the caller's.
int configure_client_bus(sd_bus* bus, UniqueFd fd, sd_id128_t server_id);

}  // namespace xpu::api_proxy
