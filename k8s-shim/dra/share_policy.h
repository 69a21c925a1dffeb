// Memory-bounded shares of a card through DRA consumable capacity (KEP-5075): with sharing on,
// each card is published twice, whole ("xpu-<i>") and shareable ("xpu-<i>-shared",
// allowMultipleAllocations, capacity memory under a requestPolicy), and both consume the card's
// whole counter set (KEP-4815), so the scheduler gives a card either to one whole-card claim or
// to shares, never both. docs/dra-sharing.md says why this model and these defaults.
#pragma once

#include <cstdint>

namespace shim::dra {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Who makes a share's memory-bounded cXPU instance. Either way the container gets
// CXPU_CONTAINER_MEMORY_LIMIT and CXPU_VISIBLE_DEVICES.
enum class ShareEnforcement {
  // OCI hooks in the share's CDI spec run xpud's Manager.InstanceHook (xpuctl), which has xpud
  // make the container's instance on exactly the share's card with exactly its grant; where
  // xpud cannot (InstancesSupported false), no hooks, as with `runtime`.
  xpud,
  // The vendor's container runtime alone, from the variables (its cxpu hook).
  runtime,
};

struct SharePolicy {
  bool enabled = false;
  ShareEnforcement enforcement = ShareEnforcement::xpud;
  // requestPolicy.validRange of the shared device's memory: a request below `minimum` is raised
  // to it, one between steps rounded up to minimum + n * step; a request naming no amount takes
  // `default_memory` (minimum + n * step too, which the options check).
  std::int64_t minimum = kGiB;
  std::int64_t step = kGiB;
  std::int64_t default_memory = kGiB;

  bool operator==(const SharePolicy&) const = default;
};

}  // namespace shim::dra
