#include "k8s-shim/dra/kubelet/claim_preparation.h"

#include <algorithm>

#include "common/names.h"
#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kubelet/claim_cdi_names.h"
#include "k8s-shim/dra/offered_cards.h"

namespace shim::dra {
namespace {

xpu::Error claim_error(const ClaimReference& reference, const std::string& reason) {
  return xpu::Error{"claim " + claim_label(reference.namespace_name, reference.name) + ": " +
                    reason};
}

// The card's name in xpud's CDI spec: its UUID when the spec names it so (stable across a
// renumbering of the cards), else its index.
std::string card_cdi_id(const xpu::DeviceInfo& card) {
  namespace cdi = xpu::names::cdi;
  return cdi::qualified_name(cdi::is_uuid_name(card.uuid) ? card.uuid : std::to_string(card.index));
}

const xpu::DeviceInfo* find_card(const std::vector<xpu::DeviceInfo>& cards, unsigned index) {
  auto it = std::find_if(cards.begin(), cards.end(), [&](const xpu::DeviceInfo& card) {
    return card.index == index && is_preparable(card);
  });
  return it == cards.end() ? nullptr : &*it;
}

// Why the device at `index` is no card to prepare: a PF with SR-IOV on is named, since the
// scheduler could only have picked it from a slice published before its VFs were turned on.
std::string why_not_a_card(const std::vector<xpu::DeviceInfo>& cards, unsigned index) {
  const bool sriov_pf = std::any_of(
      cards.begin(), cards.end(),
      [index](const xpu::DeviceInfo& card) { return card.index == index && card.sriov_enabled; });
  return sriov_pf ? " is a physical function with SR-IOV on, which has no compute of its own"
                  : " is not a card on this node";
}

void add_request(std::vector<std::string>& requests, const std::string& request) {
  if (std::find(requests.begin(), requests.end(), request) == requests.end())
    requests.push_back(request);
}

// The result's device (its share `share_id`; empty: the whole device), made by `make` the first
// time it comes up; a device (or share) already there gets the result's request added.
template <typename Make>
void add_device(std::vector<PreparedDevice>& devices, const AllocatedDevice& result,
                const std::string& share_id, Make make) {
  auto same = std::find_if(devices.begin(), devices.end(), [&](const PreparedDevice& d) {
    return d.device == result.device && d.share_id == share_id;
  });
  if (same == devices.end())
    devices.push_back(make());
  else
    add_request(same->requests, result.request);
}

}  // namespace

std::string claim_label(std::string_view namespace_name, std::string_view name) {
  return std::string(namespace_name) + "/" + std::string(name);
}

xpu::Result<PreparedClaim> prepare_claim(const ClaimReference& reference,
                                         const AllocatedClaim& claim, std::string_view node_name,
                                         const std::vector<xpu::DeviceInfo>& cards,
                                         const std::vector<xpu::VfioFunctionInfo>& vfio_functions) {
  if (claim.uid != reference.uid)
    return claim_error(reference, "the API server has UID " + claim.uid +
                                      " where the kubelet has " + reference.uid +
                                      " (the claim was recreated)");
  if (!is_claim_uid(reference.uid))
    return claim_error(reference, "UID \"" + reference.uid + "\" is not a valid claim UID");
  if (!claim.allocated) return claim_error(reference, "it is not allocated");

  PreparedClaim prepared{reference.uid, reference.namespace_name, reference.name, {}};
  prepared.pod_claim_name = claim.pod_claim_name;
  // Requests in the order of their first result, so the CDI names come out in a stable order.
  std::vector<std::string> requests;
  for (const AllocatedDevice& result : claim.results) {
    if (result.driver != kDriverName) continue;
    const std::string what = "device " + result.device + " of request " + result.request;
    if (result.pool != node_name)
      return claim_error(reference, what + " is in pool " + result.pool + ", not this node's (" +
                                        std::string(node_name) + ")");
    if (result.request.empty()) return claim_error(reference, "a result names no request");
    const std::string cdi_name = claim_cdi_device_name(reference.uid, result.request);
    if (!xpu::names::cdi::is_device_name(cdi_name))
      return claim_error(reference, "request " + result.request + " gives no valid CDI name");
    if (result.device.starts_with(kVfioDevicePrefix)) {
      const xpu::VfioFunctionInfo* function = find_vfio_function(vfio_functions, result.device);
      if (!function)
        return claim_error(reference, what + " is not a function on vfio-pci on this node");
      add_request(requests, result.request);
      add_device(prepared.devices, result, {}, [&] {
        PreparedDevice device;
        device.requests = {result.request};
        device.pool = result.pool;
        device.device = result.device;
        device.cdi_ids = {xpu::names::vfio::cdi_qualified_name(function->pci_bus_id)};
        device.vfio_pci_bus_id = function->pci_bus_id;
        return device;
      });
      continue;
    }
    std::optional<NamedDevice> named = named_device(result.device);
    if (!named) return claim_error(reference, what + " is not a device name of this driver");
    const std::optional<unsigned> index = named->index;
    if (named->shared && !is_claim_uid(result.share_id))
      return claim_error(reference, what + " is a share without a valid shareID");
    if (named->shared && (!result.consumed_memory || *result.consumed_memory <= 0))
      return claim_error(reference, what + " is a share without consumedCapacity.memory");
    const xpu::DeviceInfo* card = find_card(cards, *index);
    // Only a whole physical card has a shareable device.
    if (card && named->shared && card->is_virtual_function)
      return claim_error(reference, what + " is a share of a virtual function, which has none");
    if (!card) return claim_error(reference, what + why_not_a_card(cards, *index));
    if (is_on_vfio(*card, vfio_functions))
      return claim_error(reference,
                         what + " is on vfio-pci (for virtual machines), in no compute pool");
    // The kubelet retries a failed prepare; the scheduler should not have picked this card. An
    // admin-access claim may have picked it on purpose: diagnostics of a sick card is its use.
    if (!card->healthy && !result.admin_access)
      return claim_error(
          reference,
          what + " is unhealthy" + (card->health_reason.empty() ? "" : ": " + card->health_reason));

    add_request(requests, result.request);
    const std::string share_id = named->shared ? result.share_id : std::string();
    add_device(prepared.devices, result, share_id, [&] {
      return PreparedDevice{{result.request}, result.pool,
                            result.device,    *index,
                            card->uuid,       {card_cdi_id(*card)},
                            share_id,         named->shared ? *result.consumed_memory : 0};
    });
  }

  // A runtime applies CDI edits in order and the last value of a variable wins: the request's
  // entry, which lists all its cards, goes after every card of the request.
  for (const std::string& request : requests) {
    bool shares = false, whole = false, vfio = false;
    for (const PreparedDevice& d : prepared.devices)
      if (std::find(d.requests.begin(), d.requests.end(), request) != d.requests.end())
        (!d.vfio_pci_bus_id.empty() ? vfio : d.share_id.empty() ? whole : shares) = true;
    if (shares && whole)
      return claim_error(reference, "request " + request +
                                        " has both shares and whole cards, which one container "
                                        "cannot hold: the runtime bounds all its cards alike");
    if (vfio && (shares || whole))
      return claim_error(reference, "request " + request +
                                        " has both functions on vfio-pci and cards: a class "
                                        "that selects both is not this driver's");
    auto last = std::find_if(
        prepared.devices.rbegin(), prepared.devices.rend(), [&](const PreparedDevice& d) {
          return std::find(d.requests.begin(), d.requests.end(), request) != d.requests.end();
        });
    last->cdi_ids.push_back(claim_cdi_qualified_name(reference.uid, request));
  }
  return prepared;
}

}  // namespace shim::dra
