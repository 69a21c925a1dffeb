// What NodePrepareResources hands the kubelet for one claim, decided from the claim the API server
// holds and the cards on this node. Pure: no gRPC, no files, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/xpud_types.h"
#include "k8s-shim/dra/kube/resource_slice.h"
#include "k8s-shim/dra/kubelet/allocated_claim.h"

namespace shim::dra {

// A device's attributes as a ResourceSlice spells them (name -> v1 DeviceAttribute): what the
// device metadata file (device_metadata.h) says about a prepared device.
using DeviceAttributes = std::map<std::string, AttributeValue>;

// One card of a prepared claim, with every request of the claim that got it.
struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool, device;  // as allocated: the node's name, "xpu-<index>"
  unsigned index = 0;
  std::string uuid;
  // In the order the runtime must apply them: the card's own name in xpud's spec, then (on the
  // last card of each request) the claim's entry for that request.
  std::vector<std::string> cdi_ids;
  // A share of the card ("xpu-<index>-shared"): its allocation's shareID and the bytes granted.
  // Empty and 0 for a whole card.
  std::string share_id{};
  std::int64_t memory_limit{};
  // A function on vfio-pci ("vfio-<address>"): its PCI address; empty for a card. Its index
  // and uuid are then empty and 0, and its CDI name is its device in xpud's VFIO spec
  // (kunlunxin.com/xpu_vfio=<address>: /dev/vfio/<group>, /dev/vfio/vfio).
  std::string vfio_pci_bus_id{};
  // What the device metadata file says about the device, fixed when it was prepared (the role's
  // choice: metadata_attributes.h) and kept in the checkpoint, so that a rewrite after a reboot
  // says the same. Empty for a record from before device metadata.
  DeviceAttributes attributes{};

  bool operator==(const PreparedDevice&) const = default;
};

struct PreparedClaim {
  std::string uid, namespace_name, name;
  std::vector<PreparedDevice> devices;  // in the order of their first allocation result
  // With shares: the command (Manager.InstanceHook) whose OCI hooks make and destroy each
  // container's cXPU instance of the shares' cards; empty: no hooks, the runtime enforces.
  std::vector<std::string> instance_hook{};
  // Whether the hook names the share and its claim (xpud's ShareInstancesSupported): then xpud
  // bounds each share by one container at a time. An older xpud's xpuctl takes only INDEX BYTES.
  bool instance_hook_names_share = false;
  // A claim made from a template: the pod's name for it (AllocatedClaim::pod_claim_name), which
  // places its device metadata file in the container; empty otherwise.
  std::string pod_claim_name{};

  bool operator==(const PreparedClaim&) const = default;
};

// The claim as the kubelet names it in NodePrepareResources.
struct ClaimReference {
  std::string namespace_name, uid, name;
};

// "<namespace>/<name>", how every message names a claim.
std::string claim_label(std::string_view namespace_name, std::string_view name);

// The claim's devices on this node. Errors (which name the claim and the reason): the API
// server's claim has another UID (it was deleted and recreated), it is not allocated, one of our
// results is for another node's pool, names no card of ours (or a VF, or a PF with SR-IOV on),
// or an unhealthy card (unless the result has admin access), a share without its shareID or
// consumed memory, or a request with both shares and whole cards (the vendor's runtime bounds
// every card of a container alike). Nothing here is exclusive: a card
// in several claims (admin access) is prepared for each.
// Results for other drivers are ignored.
// A result may name a card or a virtual function (offered_cards.h), or a function on vfio-pci
// that `vfio_functions` lists: a card xpud lists there too is refused as a card (it left the
// compute pool), a function no longer there (unbound since the scheduler picked it) is refused,
// and a request may not mix functions on vfio-pci with cards (their claim entries set different
// variables; the classes keep them apart).
xpu::Result<PreparedClaim> prepare_claim(
    const ClaimReference& reference, const AllocatedClaim& claim, std::string_view node_name,
    const std::vector<xpu::DeviceInfo>& cards,
    const std::vector<xpu::VfioFunctionInfo>& vfio_functions = {});

}  // namespace shim::dra
