#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/file_replacement.h"
#include "common/names.h"
#include "k8s-shim/dra/kubelet/claim_cdi_names.h"

namespace shim::dra {

std::string claim_cdi_spec_file_name(std::string_view uid) {
  return "kunlunxin-claim-" + std::string(uid) + ".json";
}

std::string claim_cdi_spec_json(const PreparedClaim& claim, const DeviceMetadataFiles* metadata) {
  // Request -> its cards (index, uuid); std::map keeps the devices in a stable order.
  std::map<std::string, std::vector<std::pair<unsigned, std::string>>> cards_of;
  // Request -> the least memory granted to one of its shares (none: whole cards).
  std::map<std::string, std::int64_t> least_share_of;
  // Request -> the addresses of its functions on vfio-pci (prepare keeps them from its cards).
  std::map<std::string, std::vector<std::string>> vfio_of;
  for (const PreparedDevice& device : claim.devices)
    for (const std::string& request : device.requests) {
      if (!device.vfio_pci_bus_id.empty()) {
        vfio_of[request].push_back(device.vfio_pci_bus_id);
        continue;
      }
      cards_of[request].emplace_back(device.index, device.uuid);
      if (device.share_id.empty()) continue;
      auto [least, added] = least_share_of.try_emplace(request, device.memory_limit);
      if (!added) least->second = std::min(least->second, device.memory_limit);
    }

  // Each request's variables: its cards' or, for functions on vfio-pci, their addresses where
  // KubeVirt's virt-launcher reads them, as the device plugin's xpu_vfio resource sets them
  // (each function's entry in xpud's spec names only itself; this one, applied last, all).
  std::map<std::string, nlohmann::json> env_of;
  for (auto& [request, addresses] : vfio_of) {
    std::sort(addresses.begin(), addresses.end());
    std::string joined;
    for (const std::string& address : addresses) joined += (joined.empty() ? "" : ",") + address;
    namespace vfio = xpu::names::vfio;
    env_of[request] = {vfio::pci_resource_env(vfio::kResourceName) + "=" + joined};
  }
  for (auto& [request, cards] : cards_of) {
    std::sort(cards.begin(), cards.end());
    std::string indices, uuids;
    for (const auto& [index, uuid] : cards) {
      if (!indices.empty()) indices += ',', uuids += ',';
      indices += std::to_string(index);
      uuids += uuid;
    }
    env_of[request] = {std::string(xpu::names::kVisibleDevicesEnv) + "=" + indices,
                       std::string(xpu::names::kVendorRuntimeVisibleDevicesEnv) + "=" + indices,
                       std::string(xpu::names::kUuidsEnv) + "=" + uuids};
    // The vendor's runtime divides the limit evenly among the container's cards: the request's
    // cards times its least grant keeps every card within what was granted on it.
    if (auto least = least_share_of.find(request); least != least_share_of.end())
      env_of[request].push_back(
          std::string(xpu::names::kVendorRuntimeMemoryLimitEnv) + "=" +
          std::to_string(least->second * static_cast<std::int64_t>(cards.size())));
  }

  nlohmann::json devices = nlohmann::json::array();
  for (auto& [request, env] : env_of) {
    nlohmann::json edits = {{"env", std::move(env)}};
    // Read-only, as kubeletplugin/metadata.go mounts it: the file is the driver's word.
    if (metadata) {
      const std::string_view base = base_request(request);
      edits["mounts"] =
          nlohmann::json::array({{{"hostPath", metadata->file(claim, base).string()},
                                  {"containerPath", metadata_container_path(claim, base)},
                                  {"options", {"ro", "bind"}}}});
    }
    // xpud makes each container's instance on each shared card with exactly its grant, and
    // destroys it when the container is gone (docs/dra-sharing.md: why this over the runtime).
    if (least_share_of.contains(request) && !claim.instance_hook.empty()) {
      nlohmann::json hooks = nlohmann::json::array();
      for (const PreparedDevice& device : claim.devices) {
        if (device.share_id.empty() || std::find(device.requests.begin(), device.requests.end(),
                                                 request) == device.requests.end())
          continue;
        auto hook = [&](std::string_view name, std::vector<std::string> command) {
          std::vector<std::string> args = claim.instance_hook;
          args.insert(args.end(), command.begin(), command.end());
          hooks.push_back(
              {{"hookName", name}, {"path", claim.instance_hook.front()}, {"args", args}});
        };
        const std::string index = std::to_string(device.index);
        // The share and its claim, so that xpud holds one bound per share however many
        // containers use the claim, and the instance's owner is in the claim's namespace
        // whatever the container's annotations say (docs/dra-sharing.md, "One bound per share");
        // not to an xpud whose xpuctl predates them, which would refuse the hook.
        std::vector<std::string> create = {"hook-create-instance", index,
                                           std::to_string(device.memory_limit)};
        if (claim.instance_hook_names_share) {
          create.push_back(claim.uid + "/" + device.share_id);
          create.push_back(claim.namespace_name + "/" + claim.name);
        }
        hook("createContainer", std::move(create));
        hook("poststop", {"hook-destroy-instance", index});
      }
      edits["hooks"] = std::move(hooks);
    }
    devices.push_back({
        {"name", claim_cdi_device_name(claim.uid, request)},
        {"containerEdits", std::move(edits)},
    });
  }
  nlohmann::json spec = {
      {"cdiVersion", "0.5.0"},
      {"kind", kClaimCdiKind},
      {"devices", std::move(devices)},
  };
  return spec.dump(2) + "\n";
}

ClaimCdiSpecs::ClaimCdiSpecs(std::filesystem::path directory) : directory_(std::move(directory)) {}

xpu::Status ClaimCdiSpecs::write(const PreparedClaim& claim,
                                 const DeviceMetadataFiles* metadata) const {
  if (!is_claim_uid(claim.uid)) return xpu::Error{"invalid claim UID \"" + claim.uid + "\""};
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error)
    return xpu::Error{"cannot create CDI directory " + directory_.string() + ": " +
                      error.message()};
  auto written = xpu::replace_file_if_changed(directory_, claim_cdi_spec_file_name(claim.uid),
                                              claim_cdi_spec_json(claim, metadata),
                                              xpu::FileReplacement{.mode = 0644, .durable = false});
  if (!written) return xpu::Error{written.error()};
  return xpu::ok_status();
}

xpu::Status ClaimCdiSpecs::remove(std::string_view uid) const {
  // Whatever the kubelet sends must not become a path outside the directory.
  if (!is_claim_uid(uid)) return xpu::Error{"invalid claim UID \"" + std::string(uid) + "\""};
  auto removed = xpu::remove_replaced_file(directory_, claim_cdi_spec_file_name(uid));
  if (!removed) return xpu::Error{removed.error()};
  return xpu::ok_status();
}

}  // namespace shim::dra
