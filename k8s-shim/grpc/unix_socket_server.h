// One gRPC server on one unix socket, owned, for every role that serves the kubelet (the device
// plugin's per-resource sockets, the DRA driver's dra.sock and registration socket): start()
// binds a private name and renames the socket to the path (replacing a socket there: the stale
// one of an earlier run, or the served one of the process this one replaces), the destructor
// removes the socket if the path still holds it, then stops the server. socket_file.h says why.
// Every server gets the same bounds on its threads and message size (unix_socket_server.cpp says
// why those). The services are the caller's and must outlive the server.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <grpcpp/impl/service_type.h>
#include <grpcpp/server.h>

#include "common/result.h"
#include "k8s-shim/socket_file.h"

namespace shim {

class UnixSocketServer {
 public:
  static xpu::Result<std::unique_ptr<UnixSocketServer>> start(std::filesystem::path socket_path,
                                                              grpc::Service& service);
  // Several services on one socket (the DRA endpoint serves DRAPlugin and DRAResourceHealth).
  static xpu::Result<std::unique_ptr<UnixSocketServer>> start(
      std::filesystem::path socket_path, const std::vector<grpc::Service*>& services);
  ~UnixSocketServer();
  UnixSocketServer(const UnixSocketServer&) = delete;
  UnixSocketServer& operator=(const UnixSocketServer&) = delete;

  const std::filesystem::path& socket_path() const { return socket_path_; }
  // False once the socket we bound is gone or replaced (the kubelet deletes device-plugin
  // sockets when it restarts): the server must be started again.
  bool socket_present() const;
  // Also tells a socket the kubelet deleted from one another process put in its place.
  BoundSocketFile::State socket_state() const;

 private:
  explicit UnixSocketServer(std::filesystem::path socket_path)
      : socket_path_(std::move(socket_path)) {}

  std::filesystem::path socket_path_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<BoundSocketFile> socket_file_;
};

}  // namespace shim
