#include "k8s-shim/grpc/unix_socket_server.h"

#include <chrono>

#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

namespace shim {
namespace {

// Calls still running when the server stops get this long before being cancelled.
constexpr std::chrono::milliseconds kShutdownGrace{500};
// What the server receives; sends are not bounded. The kubelet's messages are small: a DRA call
// names at most 128 claims, and the largest device-plugin message, GetPreferredAllocation's list
// of available IDs, is 64 cards x 64 shared replicas = 4096 IDs of about 45 bytes (a UUID and
// `::<replica>`), under 200 KiB, or in shared mode's memory form 64 cards x 256 memory units
// (kMaxMemoryUnitsPerCard) = 16384 IDs, about 750 KiB.
// Anything larger is not the kubelet.
constexpr int kMaxMessageBytes = 1 << 20;
// Threads per server (each socket has its own quota), gRPC's pollers included; a call beyond
// them gets RESOURCE_EXHAUSTED, so a client that opens many calls cannot make the server spawn a
// thread for each. A stream holds a thread for its life. The kubelet needs far fewer: on a
// device-plugin socket one ListAndWatch (one resource per socket), a second one for the moments
// after a kubelet restart until the old stream's cancellation is seen (within 100 ms), and its
// unary calls one at a time; on dra.sock one call at a time plus at most
// HealthService::kMaxStreams (4) health streams; on the registration socket GetInfo and
// NotifyRegistrationStatus. The tests hold at most two ListAndWatch streams (a stalled and a
// reading one) or the 4 health streams plus a refused fifth at once.
constexpr int kMaxThreads = 12;

}  // namespace

xpu::Result<std::unique_ptr<UnixSocketServer>> UnixSocketServer::start(
    std::filesystem::path socket_path, grpc::Service& service) {
  return start(std::move(socket_path), std::vector<grpc::Service*>{&service});
}

xpu::Result<std::unique_ptr<UnixSocketServer>> UnixSocketServer::start(
    std::filesystem::path socket_path, const std::vector<grpc::Service*>& services) {
  if (services.empty()) return xpu::Error{"no gRPC service to serve on " + socket_path.string()};
  if (auto usable = check_socket_path(socket_path); !usable) return xpu::Error{usable.error()};
  // gRPC unlinks the socket at the address it binds, before binding and when it shuts down:
  // bound at a private name, those unlinks never meet a socket of another process at the path.
  auto bind_path = private_bind_path(socket_path);
  if (!bind_path) return xpu::Error{bind_path.error()};
  const std::string address = "unix:" + bind_path->string();

  std::unique_ptr<UnixSocketServer> server(new UnixSocketServer(std::move(socket_path)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  grpc::ResourceQuota quota("unix:" + server->socket_path_.string());
  quota.SetMaxThreads(kMaxThreads);
  builder.SetResourceQuota(quota);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server->server_ = builder.BuildAndStart();
  if (!server->server_)
    return xpu::Error{"cannot serve gRPC on " + server->socket_path_.string() + " (binding " +
                      bind_path->string() + " failed)"};
  // On failure the destructor's shutdown removes the private name.
  auto bound = BoundSocketFile::publish(*bind_path, server->socket_path_);
  if (!bound) return xpu::Error{bound.error()};
  server->socket_file_ = std::move(*bound);
  return server;
}

UnixSocketServer::~UnixSocketServer() {
  // The path goes first: while our socket is open its inode number cannot be given to a new
  // file, so "still ours" cannot match another process's socket; and nobody dials a server
  // that is stopping.
  if (socket_file_) socket_file_->remove_if_ours();
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
}

bool UnixSocketServer::socket_present() const {
  return socket_file_ && socket_file_->present();
}

BoundSocketFile::State UnixSocketServer::socket_state() const {
  return socket_file_ ? socket_file_->state() : BoundSocketFile::State::kGone;
}

}  // namespace shim
