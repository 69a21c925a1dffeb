// Pod-resources List replies for the exporter's tests, built as the kubelet sends them.
#pragma once

#include <string>

#include "k8s-shim/exporter/pod_owners_cache.h"

namespace shim::exporter::test {

// One pod in namespace "default" whose container "main" holds the card `uuid` of kunlunxin.com/xpu.
inline v1::ListPodResourcesResponse one_pod_holding(const std::string& pod,
                                                    const std::string& uuid) {
  v1::ListPodResourcesResponse reply;
  auto* entry = reply.add_pod_resources();
  entry->set_namespace_("default");
  entry->set_name(pod);
  auto* container = entry->add_containers();
  container->set_name("main");
  auto* devices = container->add_devices();
  devices->set_resource_name("kunlunxin.com/xpu");
  devices->add_device_ids(uuid);
  return reply;
}

}  // namespace shim::exporter::test
