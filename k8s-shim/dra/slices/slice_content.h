// What this node's ResourceSlice should say, from the xpud watcher's view: pure, no I/O, so that
// the attribute rules (names, version normalisation, link groups) are tested on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/xpud_types.h"
#include "k8s-shim/dra/kube/resource_slice.h"
#include "k8s-shim/dra/share_policy.h"
#include "k8s-shim/dra/slices/device_taints.h"

namespace shim::dra {

// Attribute and capacity names (unqualified: the API puts them in the driver's domain, so CEL
// reads device.attributes["xpu.kunlunxin.com"].model).
namespace slice_attribute {
inline constexpr std::string_view kModel = "model";
inline constexpr std::string_view kUuid = "uuid";
inline constexpr std::string_view kIndex = "index";
inline constexpr std::string_view kNumaNode = "numaNode";
inline constexpr std::string_view kPciBusId = "pciBusId";
inline constexpr std::string_view kDriverVersion = "driverVersion";
inline constexpr std::string_view kHealthy = "healthy";
inline constexpr std::string_view kLinkGroup = "linkGroup";
inline constexpr std::string_view kMemory = "memory";  // capacity, bytes
// A virtual function's physical function, by PCI bus id; only VFs carry it.
inline constexpr std::string_view kPhysicalFunction = "physicalFunction";
// A function on vfio-pci (given to virtual machines), which only such devices carry (true): the
// VFIO DeviceClass selects on it, the compute classes leave it out. With it: pciBusId, model,
// numaNode as a card's, and these.
inline constexpr std::string_view kVfio = "vfio";
inline constexpr std::string_view kIommuGroup = "iommuGroup";            // int: /dev/vfio/<group>
inline constexpr std::string_view kPciId = "pciId";                      // "1d22:3684"
inline constexpr std::string_view kVirtualFunction = "virtualFunction";  // bool
// A VF's PF on vfio-pci by its PCI address: not physicalFunction, which selects compute VFs.
inline constexpr std::string_view kVfioPhysicalFunction = "vfioPhysicalFunction";
}  // namespace slice_attribute

// Kubernetes' standard attributes, fully qualified in the slice as the API takes any attribute of
// another domain, so that claims can line the cards up with other drivers' devices
// (matchAttribute: resource.kubernetes.io/pcieRoot) and CEL reads
// device.attributes["resource.kubernetes.io"].pcieRoot. Spelled as
// k8s.io/dynamic-resource-allocation v0.37.2 defines them (deviceattribute/attribute.go).
namespace standard_attribute {
inline constexpr std::string_view kPciBusId = "resource.kubernetes.io/pciBusID";  // string
inline constexpr std::string_view kPcieRoot = "resource.kubernetes.io/pcieRoot";  // string
inline constexpr std::string_view kNumaNode = "resource.kubernetes.io/numaNode";  // int
}  // namespace standard_attribute

// The API's limit on attributes and capacities together, per device
// (resource.k8s.io/v1 ResourceSliceMaxAttributesAndCapacitiesPerDevice).
inline constexpr std::size_t kMaxAttributesAndCapacitiesPerDevice = 32;

// The driver version as a semantic version 2.0 string, which a {"version"} attribute must be:
//   "5.0.21" stays; "5" -> "5.0.0"; "5.0" -> "5.0.0"; leading zeros go ("05.00.1" -> "5.0.1");
//   a fourth and later numeric components become build metadata: "5.0.21.6" -> "5.0.21+6"
//   (semver ignores build metadata when comparing, so 5.0.21.6 and 5.0.21.7 compare equal:
//   CEL can compare major.minor.patch, which is what a constraint needs);
//   "5.0.21-rc1" and "5.0.21+build" (already semver) stay. A leading "v" is dropped.
// nullopt for anything else, and for results longer than the API's 64 characters.
std::optional<std::string> semantic_driver_version(std::string_view raw);

// Card index -> link group (the lowest index of the group). Taking the cards in index order, a
// card joins the first group all of whose members it is directly linked to (links are treated as
// symmetric), else it starts its own group.
std::map<unsigned, unsigned> link_groups(const std::vector<xpu::DeviceInfo>& devices);

// The API's limit on counter sets per slice (resource.k8s.io ResourceSliceMaxCounterSets).
inline constexpr std::size_t kMaxCounterSetsPerSlice = 8;
// The API's limit on devices per slice once one of them has a taint or consumes counters
// (ResourceSliceMaxDevicesWithAdvancedFeatures; 128 otherwise). Taints come and go with health,
// so the pool keeps to 64 always rather than re-cut its slices when a card fails.
inline constexpr std::size_t kMaxDevicesPerSlice = 64;

// The first devices slice of the pool for `view` without shares (desired_slices()' first: all
// devices on a node of at most kMaxDevicesPerSlice): the
// physical cards sorted by index (PFs with SR-IOV on are left out: offered_cards.h), then the
// virtual functions, with pool = node name. An attribute
// that cannot be written validly is left out, and why is appended to `omitted` (when given) for
// the caller to log; so is a standard attribute whose value the deviceattribute package would
// refuse (a pciBusID that is not an extended BDF, a pcieRoot not "pciDDDD:BB", a numaNode above
// 1023). Unknown values (empty, numaNode -1) are left out without a word. An unhealthy card
// carries its taint under `taints` (device_taints.h). No cards: a spec with no devices.
ResourceSliceSpec desired_slice(const xpu::DeviceView& view, std::string_view node_name,
                                std::int64_t generation,
                                std::vector<std::string>* omitted = nullptr,
                                const TaintPolicy& taints = {});

// The whole pool: the devices first (the cards as desired_slice() makes them, then the virtual
// functions whose PF (SR-IOV on, so not offered itself) xpud names, each a device of its own
// with the attribute physicalFunction = the PF's bus id, consuming its memory of the PF's counter
// set "xpu-<pf index>" (as large as the PF or its VFs together, whichever is more)), and with
// `shares` enabled, for each card whose memory is known and at least shares.minimum,
//   - the card's device consumes all of counter set "xpu-<i>" {memory: the card's bytes};
//   - a second device "xpu-<i>-shared" with the same attributes and taint,
//   allowMultipleAllocations,
//     capacity memory under the requestPolicy {default, validRange {min, step}}, consumes the
//     same (the allocator charges a shareable device's counters once, however many claims
//     hold it: so a card goes to shares or to one whole-card claim, never both);
// the devices in slices of at most kMaxDevicesPerSlice (one, empty, for a node without cards);
// then the functions on vfio-pci (view.vfio_functions), each a device "vfio-<address>" with the
// attribute vfio = true, its address, IOMMU group, model, PCI id, NUMA node and (a VF) its PF's
// address, no capacity, no taint (a card xpud still lists as a card while it is on vfio-pci is
// offered only so);
// then, when there are counter sets, slices holding only them, at most kMaxCounterSetsPerSlice each
// (the API takes devices or counters in a slice, not both). Every slice carries
// pool.resourceSliceCount = the number returned. A card left unshared is noted in `omitted`.
std::vector<ResourceSliceSpec> desired_slices(const xpu::DeviceView& view,
                                              std::string_view node_name, std::int64_t generation,
                                              std::vector<std::string>* omitted,
                                              const TaintPolicy& taints, const SharePolicy& shares);

// The pool as an API server that drops counters can hold it (partitionable devices off: before
// Kubernetes 1.36, or DRAPartitionableDevices off; the server strips sharedCounters and
// consumesCounters from what it stores): the counters' slices go, devices consume nothing, and
// the shareable devices go, since nothing would keep a card's shares and a whole-card claim
// apart. Virtual functions stay: their PF is never offered, which keeps them apart from it as
// long as no slice from before their SR-IOV was turned on remains.
std::vector<ResourceSliceSpec> without_counters(std::vector<ResourceSliceSpec> slices);

}  // namespace shim::dra
