#include "k8s-shim/dra/kubelet/unix_socket_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

namespace shim::dra {
namespace {

// Calls still running when the server stops get this long before being cancelled.
constexpr std::chrono::milliseconds kShutdownGrace{500};
// The kubelet's messages are small (at most 128 claim references); anything larger is not it.
constexpr int kMaxMessageBytes = 1 << 20;
// The kubelet makes one call at a time per plugin, plus on dra.sock the health stream that holds
// a thread for its life (at most HealthService::kMaxStreams of them); a few threads serve that,
// and a client that opens many calls cannot make the server spawn a thread for each.
constexpr int kMaxThreads = 12;

}  // namespace

xpu::Result<std::unique_ptr<UnixSocketServer>> UnixSocketServer::start(
    std::filesystem::path socket_path, grpc::Service& service) {
  return start(std::move(socket_path), std::vector<grpc::Service*>{&service});
}

xpu::Result<std::unique_ptr<UnixSocketServer>> UnixSocketServer::start(
    std::filesystem::path socket_path, const std::vector<grpc::Service*>& services) {
  if (services.empty()) return xpu::Error{"no gRPC service to serve on " + socket_path.string()};
  const std::string path = socket_path.string();
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return xpu::Error{"socket path " + path + " is longer than a unix socket address allows (" +
                      std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " characters)"};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return xpu::Error{path + " exists and is not a socket; refusing to replace it"};
    // Ours from an earlier run (or a server this process stopped): nobody serves it any more.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return xpu::Error{"cannot remove stale socket " + path + ": " + std::strerror(errno)};
  } else if (errno != ENOENT) {
    return xpu::Error{"cannot inspect " + path + ": " + std::strerror(errno)};
  }

  std::unique_ptr<UnixSocketServer> server(new UnixSocketServer(std::move(socket_path)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  grpc::ResourceQuota quota("dra:" + path);
  quota.SetMaxThreads(kMaxThreads);
  builder.SetResourceQuota(quota);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server->server_ = builder.BuildAndStart();
  if (!server->server_) return xpu::Error{"cannot serve gRPC on " + path};
  if (::stat(path.c_str(), &st) != 0)
    return xpu::Error{"socket " + path + " vanished right after binding: " + std::strerror(errno)};
  server->socket_device_ = st.st_dev;
  server->socket_inode_ = st.st_ino;
  return server;
}

UnixSocketServer::~UnixSocketServer() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  // Never remove a socket someone else bound at the path since.
  struct stat st {};
  if (::lstat(socket_path_.c_str(), &st) == 0 && st.st_dev == socket_device_ &&
      st.st_ino == socket_inode_)
    ::unlink(socket_path_.c_str());
}

bool UnixSocketServer::socket_present() const {
  struct stat st {};
  return ::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
         st.st_dev == socket_device_ && st.st_ino == socket_inode_;
}

}  // namespace shim::dra
