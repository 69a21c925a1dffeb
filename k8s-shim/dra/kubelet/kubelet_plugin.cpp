#include "k8s-shim/dra/kubelet/kubelet_plugin.h"

#include <spdlog/spdlog.h>

#include "k8s-shim/dra/dra_names.h"

namespace shim::dra {

std::filesystem::path KubeletPluginPaths::registration_socket() const {
  return registry_directory / (std::string(kDriverName) + "-reg.sock");
}

KubeletPlugin::KubeletPlugin(KubeletPluginPaths paths, std::unique_ptr<DraService> service)
    : paths_(std::move(paths)),
      service_(std::move(service)),
      health_(std::make_unique<HealthService>(service_->node_name())),
      // The kubelet dials the endpoint as given: make it absolute whatever the flags said.
      registration_(std::make_unique<RegistrationService>(
          std::string(kDriverName), std::filesystem::absolute(paths_.dra_socket()).string())) {}

xpu::Result<std::unique_ptr<KubeletPlugin>> KubeletPlugin::start(
    KubeletPluginPaths paths, std::unique_ptr<DraService> service) {
  if (!service) return xpu::Error{"no DRA service to serve"};
  if (auto dir = ensure_plugin_directory(paths.plugin_directory); !dir)
    return xpu::Error{dir.error()};
  std::error_code error;
  if (!std::filesystem::is_directory(paths.registry_directory, error))
    return xpu::Error{"the kubelet's plugin registry " + paths.registry_directory.string() +
                      " is not a directory (is the kubelet's directory mounted?)"};
  std::unique_ptr<KubeletPlugin> plugin(new KubeletPlugin(std::move(paths), std::move(service)));
  auto restarted = plugin->restart_missing();
  if (!restarted) return xpu::Error{restarted.error()};
  return plugin;
}

KubeletPlugin::~KubeletPlugin() {
  // Registration first: the kubelet sees the driver go before its endpoint does.
  registration_server_.reset();
  // Streams end cleanly (the kubelet sees EOF) instead of holding the server's grace period.
  health_->close_all();
  dra_server_.reset();
}

bool KubeletPlugin::sockets_present() const {
  return dra_server_ && dra_server_->socket_present() && registration_server_ &&
         registration_server_->socket_present();
}

bool KubeletPlugin::taken_over() const {
  const auto replaced = [](const std::unique_ptr<UnixSocketServer>& server) {
    return server && server->socket_state() == BoundSocketFile::State::kReplaced;
  };
  return replaced(dra_server_) || replaced(registration_server_);
}

xpu::Result<bool> KubeletPlugin::restart_missing() {
  bool restarted = false;
  if (!dra_server_ || !dra_server_->socket_present()) {
    if (dra_server_)
      spdlog::warn("DRA socket {} is gone; serving it again", paths_.dra_socket().string());
    // The old server stops before a new one takes the same services.
    health_->close_all();
    dra_server_.reset();
    std::vector<grpc::Service*> services{service_.get()};
    for (grpc::Service* health : health_->grpc_services()) services.push_back(health);
    auto server = UnixSocketServer::start(paths_.dra_socket(), services);
    if (!server) return xpu::Error{server.error()};
    dra_server_ = std::move(*server);
    restarted = true;
  }
  if (!registration_server_ || !registration_server_->socket_present()) {
    if (registration_server_)
      spdlog::warn("registration socket {} is gone; creating it again",
                   paths_.registration_socket().string());
    registration_server_.reset();
    auto server = UnixSocketServer::start(paths_.registration_socket(), *registration_);
    if (!server) return xpu::Error{server.error()};
    registration_server_ = std::move(*server);
    restarted = true;
  }
  return restarted;
}

}  // namespace shim::dra
