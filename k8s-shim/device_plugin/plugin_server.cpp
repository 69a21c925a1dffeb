#include "k8s-shim/device_plugin/plugin_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  const std::string path = socket_path.string();
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return xpu::Error{"socket path " + path + " is longer than a unix socket address allows (" +
                      std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " characters)"};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return xpu::Error{path + " exists and is not a socket; refusing to replace it"};
    // A socket of ours from an earlier run: nobody serves it any more.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return xpu::Error{"cannot remove stale socket " + path + ": " + std::strerror(errno)};
  } else if (errno != ENOENT) {
    return xpu::Error{"cannot inspect " + path + ": " + std::strerror(errno)};
  }

  std::unique_ptr<PluginServer> server(new PluginServer(
      socket_path, std::make_unique<DevicePluginService>(std::move(feed), memory_unit, cdi)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (!server->server_) return xpu::Error{"cannot serve gRPC on " + path};
  if (::stat(path.c_str(), &st) != 0)
    return xpu::Error{"socket " + path + " vanished right after binding: " + std::strerror(errno)};
  server->socket_device_ = st.st_dev;
  server->socket_inode_ = st.st_ino;
  return server;
}

PluginServer::~PluginServer() {
  if (!server_) return;
  service_->stop();
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  // gRPC may already have removed it; never remove a socket someone else bound since.
  struct stat st {};
  if (::lstat(socket_path_.c_str(), &st) == 0 && st.st_dev == socket_device_ &&
      st.st_ino == socket_inode_)
    ::unlink(socket_path_.c_str());
}

bool PluginServer::socket_present() const {
  struct stat st {};
  return ::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace shim
