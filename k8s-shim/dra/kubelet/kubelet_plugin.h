// The driver's presence on the kubelet: the DRA service on <plugin-dir>/dra.sock and the
// registration service on <registry-dir>/xpu.kunlunxin.com-reg.sock, which the kubelet's plugin
// watcher finds, asks GetInfo, and then dials the DRA endpoint.
//
// dra.sock also serves the health stream in v1alpha1 and v1 (HealthService, pool = the DRA
// service's node name); GetInfo names v1.DRAPlugin, then v1.DRAResourceHealth. The role feeds it
// through health().update().
//
// Owning the object means serving: start() creates the plugin directory (0750) if missing,
// replaces stale sockets, serves DRA first and only then creates the registration socket (the
// kubelet dials the endpoint right after GetInfo). The destructor stops both and removes the
// sockets; health streams are ended first. The kubelet never deletes the registration socket, but
// someone else may: the role's loop checks sockets_present() and calls restart_missing(). Not
// synchronised: one thread (the role's) calls the methods; gRPC's threads only reach the services.
#pragma once

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "k8s-shim/dra/kubelet/dra_service.h"
#include "k8s-shim/dra/kubelet/health_service.h"
#include "k8s-shim/dra/kubelet/plugin_directory.h"
#include "k8s-shim/dra/kubelet/registration_service.h"
#include "k8s-shim/grpc/unix_socket_server.h"

namespace shim::dra {

struct KubeletPluginPaths {
  std::filesystem::path plugin_directory = kDefaultPluginDirectory;
  std::filesystem::path registry_directory = kDefaultRegistryDirectory;

  std::filesystem::path dra_socket() const { return plugin_directory / "dra.sock"; }
  std::filesystem::path registration_socket() const;  // <registry>/xpu.kunlunxin.com-reg.sock
};

class KubeletPlugin {
 public:
  static xpu::Result<std::unique_ptr<KubeletPlugin>> start(KubeletPluginPaths paths,
                                                           std::unique_ptr<DraService> service);
  ~KubeletPlugin();
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;

  // Both sockets are still the ones we bound.
  bool sockets_present() const;
  // Another process bound a socket at one of our paths since: a newer driver pod took over.
  bool taken_over() const;
  // Serves again on whichever socket is gone (DRA first); true when one was recreated.
  xpu::Result<bool> restart_missing();
  // The kubelet's last NotifyRegistrationStatus said registered.
  bool registered() const { return registration_->registered(); }

  const KubeletPluginPaths& paths() const { return paths_; }
  DraService& service() { return *service_; }
  HealthService& health() { return *health_; }

 private:
  KubeletPlugin(KubeletPluginPaths paths, std::unique_ptr<DraService> service);

  const KubeletPluginPaths paths_;
  // Declared before the servers, which must stop before the services they call go.
  std::unique_ptr<DraService> service_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<RegistrationService> registration_;
  std::unique_ptr<UnixSocketServer> dra_server_;
  std::unique_ptr<UnixSocketServer> registration_server_;
};

}  // namespace shim::dra
