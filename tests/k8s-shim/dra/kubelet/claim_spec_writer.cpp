// Test tool: prepares one claim with the driver's own code and writes its CDI spec, so a test can
// hand the result to the CDI project's library (tests/cdi-check).
//
// Usage: dra-claim-spec-writer CDI_DIR UID REQUEST INDEX=UUID...
// Prints the CDI names the kubelet would pass for the claim's container, in order, one a line.
#include <iostream>
#include <string>
#include <vector>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kubelet/claim_cdi_spec.h"
#include "k8s-shim/dra/kubelet/claim_preparation.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: dra-claim-spec-writer CDI_DIR UID REQUEST INDEX=UUID...\n";
    return 2;
  }
  const std::string node = "node-a", uid = argv[2], request = argv[3];
  std::vector<xpu::DeviceInfo> cards;
  shim::dra::AllocatedClaim claim{"claim", "default", uid, true, {}};
  for (int i = 4; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto equals = arg.find('=');
    if (equals == std::string::npos) {
      std::cerr << "expected INDEX=UUID, got " << arg << "\n";
      return 2;
    }
    xpu::DeviceInfo card;
    card.index = static_cast<unsigned>(std::stoul(arg.substr(0, equals)));
    card.uuid = arg.substr(equals + 1);
    card.healthy = true;
    cards.push_back(card);
    claim.results.push_back(
        {request, std::string(shim::dra::kDriverName), node, shim::dra::device_name(card.index)});
  }
  auto prepared = shim::dra::prepare_claim({"default", uid, "claim"}, claim, node, cards);
  if (!prepared) {
    std::cerr << prepared.error() << "\n";
    return 1;
  }
  if (auto written = shim::dra::ClaimCdiSpecs(argv[1]).write(*prepared); !written) {
    std::cerr << written.error() << "\n";
    return 1;
  }
  for (const auto& device : prepared->devices)
    for (const auto& id : device.cdi_ids) std::cout << id << "\n";
  return 0;
}
