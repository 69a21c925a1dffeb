// Which cards running pods hold through the *other* way of handing cards out, read from the
// kubelet's pod-resources List (pure; no gRPC). A node moves between the device plugin and the
// DRA driver (the chart's `allocation`) while its pods keep running: the device plugin's pods
// keep their cards when the DRA driver takes over, and the DRA driver's claims stay prepared when
// the device plugin comes back. Each role leaves out of what it offers the cards the other one
// handed out, so no card is handed out twice across a switch (README.md).
//
// The kubelet lists active pods only (KubeletPodResourcesListUseActivePods, on by default since
// 1.34: not a pod in a terminal phase, unless its termination is still running), each container
// with its device-plugin devices (ContainerDevices) and, since 1.34
// (KubeletPodResourcesDynamicResources), the DRA devices of its claims (DynamicResource) as the
// kubelet's DRA manager prepared them (k8s.io/kubernetes v1.37.2,
// pkg/kubelet/apis/podresources/server_v1.go, pkg/kubelet/cm/container_manager_linux.go).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/xpud_types.h"
#include "podresources_v1.pb.h"

namespace shim {

// Cards some container holds, as the reply names them: by UUID (a device plugin's device IDs; a
// DRA device's CDI name) or by index (a DRA device's name, xpu-<index>).
struct HeldCards {
  std::set<std::string> uuids;
  std::set<unsigned> indices;
  // Functions on vfio-pci, by PCI address: the device plugin's <domain>/xpu_vfio IDs, a DRA
  // device vfio-<address>'s entry in xpud's VFIO CDI spec.
  std::set<std::string> vfio_functions{};

  bool holds(const xpu::DeviceInfo& device) const {
    return uuids.contains(device.uuid) || indices.contains(device.index);
  }
  bool empty() const { return uuids.empty() && indices.empty() && vfio_functions.empty(); }
  bool operator==(const HeldCards&) const = default;
};

struct HeldCardsReading {
  HeldCards held;
  // What the reply said that names no card and was ignored, each with where it was (for a
  // warning); at most kMaxIgnoredNamed entries, then one line counting the rest.
  std::vector<std::string> ignored;
};

inline constexpr std::size_t kMaxIgnoredNamed = 8;

// For the DRA driver: the cards held through a device plugin. Read are the resources in
// `resource_domain` (the device plugin's --resource-name's: every resource it advertises is
// `<domain>/...`); each device ID names its card as the plugin advertises it: the UUID (a whole
// card or an SR-IOV virtual function), or `<UUID>::<replica>` / `<UUID>::m<unit>` (a shared
// card's replicas and memory units; resource_name.h). An ID that is no valid device ID is
// ignored.
HeldCardsReading cards_held_by_device_plugin(const v1::ListPodResourcesResponse& reply,
                                             std::string_view resource_domain);

// For the device plugin: the cards held through claims of the DRA driver xpu.kunlunxin.com: each
// device by its name (xpu-<index> for a card or a virtual function, xpu-<index>-shared for a
// card's memory share: dra/dra_names.h) and by the card's name in xpud's CDI spec it was
// prepared with. Other drivers' devices are not cards; a name of ours that reads as no card is
// ignored.
HeldCardsReading cards_held_through_dra(const v1::ListPodResourcesResponse& reply);

// The card a DRA device of ours was prepared with, by its entry in xpud's CDI spec
// (kunlunxin.com/xpu=<uuid or index>), the last one listed: the kubelet (1.34 to 1.37) lists
// under each device of a claim the CDI names of that device and of every device before it in the
// claim, so only the last card name is this device's own. Empty when it lists none; the
// claim-level names (kunlunxin.com/claim=...) are not cards.
std::string card_cdi_name_of_dra_device(const v1::ClaimResource& resource);

// The PCI address a DRA device of ours on vfio-pci (vfio-<address>) was prepared with, by its
// entry in xpud's VFIO CDI spec (kunlunxin.com/xpu_vfio=<address>); empty when it lists none.
std::string vfio_function_of_dra_device(const v1::ClaimResource& resource);

// `view` without the devices `held` names (what a role may offer), its functions on vfio-pci
// too; the names (xpuN, or the function's address) of those left out are appended to `left_out`
// when given.
xpu::DeviceView without_held_cards(const xpu::DeviceView& view, const HeldCards& held,
                                   std::vector<std::string>* left_out = nullptr);

// `cards` with the held ones unhealthy for `reason` (what the DRA driver prepares from): a claim
// the scheduler allocated from a slice that still offered such a card (one the kubelet had not
// yet removed after the driver last went, or written before the card was held) is refused with
// that reason, and the kubelet retries the prepare until the pod holding the card is gone. An
// admin-access claim, which may take an unhealthy card, still gets it.
std::vector<xpu::DeviceInfo> with_held_cards_unhealthy(std::vector<xpu::DeviceInfo> cards,
                                                       const HeldCards& held,
                                                       std::string_view reason);

}  // namespace shim
