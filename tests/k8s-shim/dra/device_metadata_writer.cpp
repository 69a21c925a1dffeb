// Test tool: the device metadata files of a few claims, written by the driver's own code from a
// node's cards as xpud reports them (the attributes made by metadata_attributes, as at prepare),
// so that a test can hand them to k8s.io/dynamic-resource-allocation's own reader and writer
// (tests/device-metadata-check).
//
// Usage: dra-device-metadata-writer DIR
// Prints each file's path, one a line.
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"
#include "k8s-shim/dra/kubelet/device_metadata.h"
#include "k8s-shim/dra/metadata_attributes.h"

namespace {

using shim::dra::PreparedClaim;
using shim::dra::PreparedDevice;

xpu::DeviceInfo card(unsigned index, std::string model) {
  xpu::DeviceInfo card;
  card.index = index;
  card.uuid = "KL-UUID-" + std::to_string(index);
  card.model = std::move(model);
  card.pci_bus_id = "0000:3" + std::to_string(index) + ":00.0";
  card.pcie_root = "pci0000:3a";
  card.numa_node = index < 2 ? 0 : -1;
  card.memory_total_bytes = std::uint64_t{96} << 30;
  card.healthy = true;
  return card;
}

xpu::DeviceView node() {
  xpu::DeviceView view;
  view.xpud_present = true;
  view.manager.driver_version = "5.0.21.6";
  // A model with the characters Go's encoder escapes (<, >, &, U+2028).
  for (auto [index, model] : std::vector<std::pair<unsigned, std::string>>{
           {0, "P800"}, {1, "P800"}, {2, "P<8>&0 \xe2\x80\xa8OAM"}}) {
    view.devices.push_back(card(index, model));
    for (unsigned peer = 0; peer < 2; ++peer)
      if (index < 2 && peer != index) view.devices.back().linked_devices.push_back(peer);
  }
  return view;
}

PreparedDevice device(const xpu::DeviceView& view, std::vector<std::string> requests,
                      std::string name, std::optional<std::int64_t> grant = std::nullopt) {
  const auto named = shim::dra::named_device(name);
  PreparedDevice d{std::move(requests), "node-a", name, named->index, "", {}};
  d.attributes = shim::dra::metadata_attributes(view, name, grant);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dra-device-metadata-writer DIR\n";
    return 2;
  }
  const xpu::DeviceView view = node();
  std::vector<PreparedClaim> claims;
  // A claim of its own: two linked cards in one request, the odd model in another.
  claims.push_back({"0d6c9a52-7f3b-4b8e-9c1d-2e4f6a8b0c1d", "team", "train-xpus", {}});
  claims.back().devices = {device(view, {"xpus"}, "xpu-0"), device(view, {"xpus"}, "xpu-1"),
                           device(view, {"odd"}, "xpu-2")};
  // A claim from a template: a subrequest, and a share with its grant.
  claims.push_back({"5e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", "team", "trainer-xpus-7x2kq", {}});
  claims.back().pod_claim_name = "xpus";
  claims.back().devices = {device(view, {"xpus/big"}, "xpu-1-shared", std::int64_t{8} << 30)};
  // A record from before device metadata: no attributes.
  claims.push_back({"7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", "default", "old", {}});
  claims.back().devices = {PreparedDevice{{"xpus"}, "node-a", "xpu-0", 0, "KL-UUID-0", {}}};

  const shim::dra::DeviceMetadataFiles files(argv[1]);
  for (const PreparedClaim& claim : claims) {
    if (auto written = files.write(claim); !written) {
      std::cerr << written.error() << "\n";
      return 1;
    }
    std::vector<std::string> printed;
    for (const PreparedDevice& d : claim.devices)
      for (const std::string& request : d.requests) {
        const std::string base(shim::dra::base_request(request));
        if (std::find(printed.begin(), printed.end(), base) != printed.end()) continue;
        printed.push_back(base);
        std::cout << files.file(claim, base).string() << "\n";
      }
  }
  return 0;
}
