#include "k8s-shim/dra/kubelet/registration_service.h"

#include <spdlog/spdlog.h>

namespace shim::dra {

RegistrationService::RegistrationService(std::string driver_name, std::string endpoint)
    : driver_name_(std::move(driver_name)), endpoint_(std::move(endpoint)) {}

grpc::Status RegistrationService::GetInfo(grpc::ServerContext* /*context*/,
                                          const regpb::InfoRequest* /*request*/,
                                          regpb::PluginInfo* response) {
  response->set_type(kDraPluginType);
  response->set_name(driver_name_);
  response->set_endpoint(endpoint_);
  response->add_supported_versions(kDraServiceVersion);
  response->add_supported_versions(kDraHealthServiceVersion);
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext* /*context*/, const regpb::RegistrationStatus* status,
    regpb::RegistrationStatusResponse* /*response*/) {
  registered_.store(status->plugin_registered());
  if (status->plugin_registered())
    spdlog::info("kubelet registered DRA driver {} (endpoint {})", driver_name_, endpoint_);
  else
    spdlog::error("kubelet refused DRA driver {}: {}", driver_name_,
                  status->error().empty() ? "no reason given" : status->error());
  return grpc::Status::OK;
}

}  // namespace shim::dra
