#include "xpud-api-proxy/client_bus.h"

namespace xpu::api_proxy {

int configure_client_bus(sd_bus* bus, UniqueFd fd, sd_id128_t server_id) {
  int r = sd_bus_set_fd(bus, fd.get(), fd.get());
  if (r < 0) return r;
  fd.release();  // the bus owns it now
  if ((r = sd_bus_set_server(bus, 1, server_id)) < 0) return r;
  if ((r = sd_bus_set_anonymous(bus, 1)) < 0) return r;
  return sd_bus_negotiate_fds(bus, 0);
}

}  // namespace xpu::api_proxy
