// Which container holds which XPU, from the kubelet's pod-resources List reply.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "podresources_v1.pb.h"

namespace shim::exporter {

// Resources whose device IDs are XPU UUIDs (kunlunxin.com/xpu, kunlunxin.com/R200, ...).
inline constexpr std::string_view kXpuResourcePrefix = "kunlunxin.com/";

struct ContainerRef {
  std::string pod_namespace;
  std::string pod;
  std::string container;

  auto operator<=>(const ContainerRef&) const = default;
};

using PodMap = std::map<std::string, ContainerRef>;  // device UUID -> the container holding it

// Turns successive List replies into a PodMap with one owner per UUID.
//
// Pod-resources has no pod phase, and the kubelet keeps a finished pod's devices assigned until
// it reuses them, so an exclusive card can show up in two containers: the finished one and the
// one that got the card after it. The claim seen most recently (in the latest reply, not before)
// wins; claims first seen in the same reply are ordered by namespace, pod, container, so the
// choice never flaps between scrapes.
class PodMapBuilder {
 public:
  PodMap update(const v1::ListPodResourcesResponse& response);

 private:
  using Claim = std::tuple<std::string, ContainerRef>;  // uuid, holder
  std::map<Claim, std::uint64_t> first_seen_;           // reply number a claim first appeared in
  std::uint64_t replies_ = 0;
};

}  // namespace shim::exporter
