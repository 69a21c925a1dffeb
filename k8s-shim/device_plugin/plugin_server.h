// One resource's gRPC server on its unix socket in the plugin directory. Owning the object means
// serving: the constructor-like start() binds and puts the socket at the path (replacing a stale
// socket, or the served one of the device plugin this process replaces), the destructor ends the
// streams, removes the socket if the path still holds it and stops the server.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "k8s-shim/device_plugin/device_plugin_service.h"
#include "k8s-shim/grpc/unix_socket_server.h"

namespace shim {

class PluginServer {
 public:
  static xpu::Result<std::unique_ptr<PluginServer>> start(
      std::filesystem::path socket_path, std::shared_ptr<ResourceFeed> feed, MemoryUnit memory_unit,
      CdiMode cdi = CdiMode::kOff, DevicePluginService::DecisionHooks hooks = {});
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  const std::filesystem::path& socket_path() const { return server_->socket_path(); }
  // False once the socket file we bound is gone (the kubelet deletes plugin sockets when it
  // restarts): the server must then be started again.
  bool socket_present() const { return server_->socket_present(); }
  BoundSocketFile::State socket_state() const { return server_->socket_state(); }
  // ListAndWatch streams clients (the kubelet) opened on this server so far.
  unsigned streams_opened() const { return service_->streams_opened(); }
  unsigned decisions_under_way() const { return service_->decisions_under_way(); }

 private:
  explicit PluginServer(std::unique_ptr<DevicePluginService> service)
      : service_(std::move(service)) {}

  std::unique_ptr<DevicePluginService> service_;
  // Declared after the service it serves, so it stops first.
  std::unique_ptr<UnixSocketServer> server_;
};

}  // namespace shim
