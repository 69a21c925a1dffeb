#include "k8s-shim/dra/kubelet/unix_socket_server.h"

#include <chrono>

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
  if (auto cleared = clear_socket_path(socket_path); !cleared) return xpu::Error{cleared.error()};
  const std::string path = socket_path.string();

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
  auto bound = BoundSocketFile::record(path);
  if (!bound) return xpu::Error{bound.error()};
  server->socket_file_ = std::move(*bound);
  return server;
}

UnixSocketServer::~UnixSocketServer() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  if (socket_file_) socket_file_->remove_if_ours();
}

bool UnixSocketServer::socket_present() const {
  return socket_file_ && socket_file_->present();
}

}  // namespace shim::dra
