// The Kubernetes API server's answers as the DRA driver reads them (k8s-shim/dra/kube/): the
// input is given whole to parse_resource_claim, parse_resource_slice_list, parse_resource_slice
// and parse_quantity. The API server is hostile until checked, so each must answer an error
// rather than throw. A slice that parses must survive the trip the slice publisher makes with
// it (resource_slice_to_json, then parse again) with an equal spec: otherwise the publisher
// would see a change on every resync and rewrite the slice forever. A quantity that parses must
// read back as the same number from the text this driver writes. The Node as the node-status
// writer reads it (k8s-shim/node_status/node_api.h, parse_xpu_condition) goes through the same
// input: an answer, never a throw.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "k8s-shim/dra/kube/quantity.h"
#include "k8s-shim/dra/kube/resource_claim.h"
#include "k8s-shim/dra/kube/resource_slice.h"
#include "k8s-shim/node_status/node_api.h"

namespace {

using xpu::fuzz::check;
namespace dra = shim::dra;

void check_round_trip(const dra::ResourceSlice& slice) {
  const std::string written = dra::resource_slice_to_json(slice);
  const auto again = dra::parse_resource_slice(written);
  check(again.ok(), "a parsed slice does not parse once written",
        again ? std::string() : again.error() + "\n" + written);
  check(again->spec == slice.spec, "a slice's spec changed on the way out and back", written);
  check(again->name == slice.name && again->resource_version == slice.resource_version &&
            again->uid == slice.uid,
        "a slice's metadata changed on the way out and back", written);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // Whatever the claim holds is only compared by the kubelet half: parsing is the property.
  (void)dra::parse_resource_claim(input);
  (void)shim::node_status::parse_xpu_condition(input);

  if (const auto slices = dra::parse_resource_slice_list(input))
    for (const auto& slice : *slices) check_round_trip(slice);
  if (const auto slice = dra::parse_resource_slice(input)) check_round_trip(*slice);

  if (const auto value = dra::parse_quantity(input)) {
    const std::string text = dra::format_quantity(*value);
    const auto again = dra::parse_quantity(text);
    check(again.ok() && *again == *value, "a quantity does not read back as itself",
          std::string(input) + " -> " + text);
  }
  return 0;
}
