// Which container holds which XPU, from the kubelet's pod-resources List reply.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "podresources_v1.pb.h"

namespace shim::exporter {

// The domain of the default resource name: its resources' device IDs are XPU UUIDs
// (kunlunxin.com/xpu, kunlunxin.com/R200, kunlunxin.com/xpu-shared, kunlunxin.com/vxpu,
// kunlunxin.com/vxpu-memory).
inline constexpr std::string_view kDefaultXpuResourceDomain = "kunlunxin.com";

struct ContainerRef {
  std::string pod_namespace;
  std::string pod;
  std::string container;

  // clang-tidy 14 takes the 0 that a defaulted <=> compares its result with for a null pointer.
  // NOLINTNEXTLINE(modernize-use-nullptr)
  auto operator<=>(const ContainerRef&) const = default;
};

using PodMap = std::map<std::string, ContainerRef>;  // device UUID -> the container holding it

// Turns successive List replies into a PodMap with one owner per UUID.
//
// Read are the resources of one domain, the device plugin's (`<domain>/<anything>`): every name
// the plugin advertises (the resource name, per-model names, `xpu-shared`, `vxpu`,
// `vxpu-memory`) is in the domain of its --resource-name. Shared-mode IDs `<uuid>::<n>` and
// `<uuid>::m<n>` count for the card `<uuid>`; a container holding several replicas or memory
// units of one card holds that card once. Cards granted through
// Dynamic Resource Allocation come from `dynamic_resources`: the devices of the DRA driver
// xpu.kunlunxin.com, each known by the kunlunxin.com/xpu=<uuid> CDI name it was prepared with.
//
// Pod-resources has no pod phase, and the kubelet keeps a finished pod's devices assigned until
// it reuses them, so an exclusive card can show up in two containers: the finished one and the
// one that got the card after it. The claim seen most recently (in the latest reply, not before)
// wins; claims first seen in the same reply are ordered by namespace, pod, container, so the
// choice never flaps between scrapes.
class PodMapBuilder {
 public:
  explicit PodMapBuilder(std::string_view resource_domain = kDefaultXpuResourceDomain)
      : resource_prefix_(std::string(resource_domain) + "/") {}

  PodMap update(const v1::ListPodResourcesResponse& response);

  // Cards the last reply listed for more than one container (shared mode, or a finished pod's
  // card reused): their holder in the PodMap is a choice, not a fact about a given process.
  const std::set<std::string>& cards_with_several_holders() const { return several_holders_; }

 private:
  using Claim = std::tuple<std::string, ContainerRef>;  // uuid, holder
  std::string resource_prefix_;                         // "<domain>/"
  std::map<Claim, std::uint64_t> first_seen_;           // reply number a claim first appeared in
  std::uint64_t replies_ = 0;
  std::set<std::string> several_holders_;
};

}  // namespace shim::exporter
