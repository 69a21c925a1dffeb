// One resource's gRPC server on its unix socket in the plugin directory. Owning the object means
// serving: the constructor-like start() binds (replacing a stale socket left at the path), the
// destructor ends the streams, stops the server and removes the socket it created.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>

#include <grpcpp/server.h>

#include "common/result.h"
#include "k8s-shim/device_plugin/device_plugin_service.h"
#include "k8s-shim/socket_file.h"

namespace shim {

class PluginServer {
 public:
  static xpu::Result<std::unique_ptr<PluginServer>> start(std::filesystem::path socket_path,
                                                          std::shared_ptr<ResourceFeed> feed,
                                                          MemoryUnit memory_unit,
                                                          CdiMode cdi = CdiMode::kOff);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  const std::filesystem::path& socket_path() const { return socket_path_; }
  // False once the socket file we bound is gone (the kubelet deletes plugin sockets when it
  // restarts): the server must then be started again.
  bool socket_present() const;

 private:
  PluginServer(std::filesystem::path socket_path, std::unique_ptr<DevicePluginService> service);

  std::filesystem::path socket_path_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<BoundSocketFile> socket_file_;
};

}  // namespace shim
