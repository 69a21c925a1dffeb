#include "k8s-shim/device_plugin/plugin_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

namespace shim {
namespace {

// Streams still open when the server stops get this long to finish before being cancelled.
constexpr std::chrono::milliseconds kShutdownGrace{500};

}  // namespace

PluginServer::PluginServer(std::filesystem::path socket_path,
                           std::unique_ptr<DevicePluginService> service)
    : socket_path_(std::move(socket_path)), service_(std::move(service)) {}

xpu::Result<std::unique_ptr<PluginServer>> PluginServer::start(std::filesystem::path socket_path,
                                                               std::shared_ptr<ResourceFeed> feed,
                                                               MemoryUnit memory_unit,
                                                               CdiMode cdi) {
  if (auto cleared = clear_socket_path(socket_path); !cleared) return xpu::Error{cleared.error()};
  const std::string path = socket_path.string();

  std::unique_ptr<PluginServer> server(new PluginServer(
      socket_path, std::make_unique<DevicePluginService>(std::move(feed), memory_unit, cdi)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (!server->server_) return xpu::Error{"cannot serve gRPC on " + path};
  auto bound = BoundSocketFile::record(path);
  if (!bound) return xpu::Error{bound.error()};
  server->socket_file_ = std::move(*bound);
  return server;
}

PluginServer::~PluginServer() {
  if (!server_) return;
  service_->stop();
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  // gRPC may already have removed it.
  if (socket_file_) socket_file_->remove_if_ours();
}

bool PluginServer::socket_present() const {
  return socket_file_ && socket_file_->present();
}

}  // namespace shim
