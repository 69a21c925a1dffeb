// The checks xpud's D-Bus methods apply to their arguments before acting, apart from the bus
// objects (bus/) so that they are tested and fuzzed without a bus. The bus has
// already checked the types (and that strings are UTF-8); these check the values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xpud {

// The most of a Simulator.SetHealth reason kept: it becomes the card's HealthReason, which every
// client (the device plugin, the exporter's labels) carries along.
inline constexpr std::size_t kMaxInjectedReasonBytes = 1024;

// Why a call is refused: the D-Bus error name and the message the caller gets.
struct ArgumentRefusal {
  std::string_view error_name;
  std::string message;
};

// Simulator.SetHealth(index, health, reason): health is "Healthy" or "Unhealthy", the reason at
// most kMaxInjectedReasonBytes. The index is the simulator's to check.
std::optional<ArgumentRefusal> check_set_health_arguments(std::string_view health,
                                                          std::string_view reason);

// A cXPU instance id as the vendor's runtime makes them (the first 12 characters of a container
// id): 1 to XPUML_CXPU_INST_ID_LEN (12) characters of A-Z, a-z, 0-9, '_', '.' and '-'. Nothing
// else reaches the library, which takes the id as a C string.
std::optional<ArgumentRefusal> check_instance_id(std::string_view id);

// A cXPU instance's global-memory limit: at least 1 byte, at most the card's memory when known
// (`card_memory_bytes` 0: unknown). All ones, the library's "no limit", is refused like any value
// above the card's memory: an instance is made to be bounded.
std::optional<ArgumentRefusal> check_instance_memory_limit(std::uint64_t limit_bytes,
                                                           std::uint64_t card_memory_bytes);

// The memory share a cXPU instance bounds (Manager.CreateShareInstance): "<claim uid>/<share
// id>" as the DRA driver writes it, checked only as a key: 1 to kMaxInstanceShareBytes of A-Z,
// a-z, 0-9, '-', '.', '_' and '/'. It reaches the log and the refusals that name it.
inline constexpr std::size_t kMaxInstanceShareBytes = 128;
std::optional<ArgumentRefusal> check_instance_share(std::string_view share);

// Who a cXPU instance is for: empty, or xpu::names::is_instance_owner.
std::optional<ArgumentRefusal> check_instance_owner(std::string_view owner);

}  // namespace xpud
