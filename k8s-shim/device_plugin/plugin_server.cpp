#include "k8s-shim/device_plugin/plugin_server.h"

namespace shim {

xpu::Result<std::unique_ptr<PluginServer>> PluginServer::start(
    std::filesystem::path socket_path, std::shared_ptr<ResourceFeed> feed, MemoryUnit memory_unit,
    CdiMode cdi, DevicePluginService::DecisionHooks hooks) {
  std::unique_ptr<PluginServer> server(new PluginServer(
      std::make_unique<DevicePluginService>(std::move(feed), memory_unit, cdi, std::move(hooks))));
  auto serving = UnixSocketServer::start(std::move(socket_path), *server->service_);
  if (!serving) return xpu::Error{serving.error()};
  server->server_ = std::move(*serving);
  return server;
}

PluginServer::~PluginServer() {
  if (!server_) return;
  // The streams end first: the server's shutdown would otherwise wait its grace for them.
  service_->stop();
  server_.reset();
}

}  // namespace shim
