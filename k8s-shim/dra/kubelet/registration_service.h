// The plugin's side of the kubelet's plugin watcher (pluginregistration.Registration on the
// socket in /var/lib/kubelet/plugins_registry): GetInfo says who we are and where the DRA service
// listens, NotifyRegistrationStatus tells us whether the kubelet accepted it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "pluginregistration_v1.grpc.pb.h"

namespace shim::dra {

namespace regpb = ::pluginregistration;

// The plugin type the kubelet expects of a DRA driver, and the services we serve (the kubelet
// also knows "v1beta1.DRAPlugin"; we serve only v1).
inline constexpr const char* kDraPluginType = "DRAPlugin";
inline constexpr const char* kDraServiceVersion = "v1.DRAPlugin";
// Kubelets with the GA health API call v1.DRAResourceHealth only when GetInfo lists it. It comes
// after kDraServiceVersion: the 1.34 kubelet takes the first entry it knows for DRAPlugin and
// skips ones it does not know, and it finds v1alpha1 health by calling it whatever the list says.
inline constexpr const char* kDraHealthServiceVersion = "v1.DRAResourceHealth";

class RegistrationService final : public regpb::Registration::Service {
 public:
  // `endpoint`: the absolute path of the DRA service's socket.
  RegistrationService(std::string driver_name, std::string endpoint);

  grpc::Status GetInfo(grpc::ServerContext* context, const regpb::InfoRequest* request,
                       regpb::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext* context,
                                        const regpb::RegistrationStatus* status,
                                        regpb::RegistrationStatusResponse* response) override;

  // What the kubelet last reported (false until it does). Any thread.
  bool registered() const { return registered_.load(); }

 private:
  const std::string driver_name_;
  const std::string endpoint_;
  std::atomic<bool> registered_{false};
};

}  // namespace shim::dra
