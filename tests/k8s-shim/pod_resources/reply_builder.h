// Pod-resources List replies as the kubelet sends them (k8s.io/kubernetes v1.37.2,
// pkg/kubelet/apis/podresources/server_v1.go): pods, their containers, each container's
// device-plugin devices and the devices of its DRA claims.
#pragma once

#include <string>
#include <vector>

#include "podresources_v1.pb.h"

namespace shim::test {

class ReplyBuilder {
 public:
  // A container of pod `ns`/`pod` (the pod is added on first use).
  ReplyBuilder& container(const std::string& ns, const std::string& pod, const std::string& name) {
    v1::PodResources* entry = nullptr;
    for (auto& existing : *reply_.mutable_pod_resources())
      if (existing.namespace_() == ns && existing.name() == pod) entry = &existing;
    if (!entry) {
      entry = reply_.add_pod_resources();
      entry->set_namespace_(ns);
      entry->set_name(pod);
    }
    container_ = entry->add_containers();
    container_->set_name(name);
    return *this;
  }
  // Device-plugin devices of the current container.
  ReplyBuilder& devices(const std::string& resource, const std::vector<std::string>& ids) {
    auto* devices = container_->add_devices();
    devices->set_resource_name(resource);
    for (const auto& id : ids) devices->add_device_ids(id);
    return *this;
  }
  // A claim of the current container (its devices follow with claim_device()).
  ReplyBuilder& claim(const std::string& ns, const std::string& name) {
    claim_ = container_->add_dynamic_resources();
    claim_->set_claim_namespace(ns);
    claim_->set_claim_name(name);
    return *this;
  }
  ReplyBuilder& claim_device(const std::string& driver, const std::string& pool,
                             const std::string& device,
                             const std::vector<std::string>& cdi_names = {}) {
    auto* resource = claim_->add_claim_resources();
    resource->set_driver_name(driver);
    resource->set_pool_name(pool);
    resource->set_device_name(device);
    for (const auto& name : cdi_names) resource->add_cdi_devices()->set_name(name);
    return *this;
  }

  const v1::ListPodResourcesResponse& reply() const { return reply_; }
  operator const v1::ListPodResourcesResponse&() const { return reply_; }

 private:
  v1::ListPodResourcesResponse reply_;
  v1::ContainerResources* container_ = nullptr;
  v1::DynamicResource* claim_ = nullptr;
};

}  // namespace shim::test
