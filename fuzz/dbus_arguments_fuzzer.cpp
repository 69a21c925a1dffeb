// The argument checks behind xpud's D-Bus methods, without a bus (the bus has checked the types
// and that strings are UTF-8; the values are the caller's): Simulator.SetHealth and SetMetric on
// the sim backend, ConfigureVirtualFunctions on a card whose sriov_totalvfs and sriov_numvfs hold
// what the input says (the sysfs path of both hardware backends), and the read-only API proxy's
// routing of a cluster client's call, and CreateInstance/DestroyInstance's checks before the sim
// backend's cXPU instances. The input is a sequence of such calls (FuzzedDataProvider).
// What a call accepted must show in the next reading; the proxy may forward nothing but xpud's
// reads and the one write it gates.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/names.h"
#include "fuzz/fuzz_support.h"
#include "xpud-api-proxy/api_filter.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/sim/sim_backend.h"
#include "xpud/backends/simulator.h"
#include "xpud/backends/sriov_numvfs.h"
#include "xpud/backends/sysfs_attribute.h"
#include "xpud/requests/method_arguments.h"

namespace {

using xpu::fuzz::check;
namespace names = xpu::names;
namespace proxy = xpu::api_proxy;

constexpr unsigned kCards = 4;

// What the calls so far should have left on each card.
struct Expected {
  std::optional<std::string> fault;  // set by SetHealth(Unhealthy)
  std::map<std::string, double> pinned;
};

std::string any_metric_key(FuzzedDataProvider& input) {
  if (input.ConsumeBool()) return input.ConsumeRandomLengthString(64);
  return std::string(names::metric::kAll[input.ConsumeIntegralInRange<std::size_t>(
      0, names::metric::kAll.size() - 1)]);
}

void set_health(FuzzedDataProvider& input, xpud::Simulator& simulator,
                std::vector<Expected>& cards) {
  const auto index = input.ConsumeIntegralInRange<std::uint32_t>(0, kCards + 1);
  const std::string health =
      input.ConsumeBool() ? std::string(input.ConsumeBool() ? names::kHealthy : names::kUnhealthy)
                          : input.ConsumeRandomLengthString(16);
  const std::string reason = input.ConsumeRandomLengthString(1100);
  if (auto refusal = xpud::check_set_health_arguments(health, reason)) {
    check(refusal->error_name == names::kErrorInvalidArgument, "refusal name");
    check((health != names::kHealthy && health != names::kUnhealthy) ||
              reason.size() > xpud::kMaxInjectedReasonBytes,
          "refused good arguments", health);
    return;
  }
  const bool healthy = health == names::kHealthy;
  auto error = simulator.set_health(index, healthy, reason);
  check(error.has_value() == (index >= kCards), "SetHealth on a card that does not exist");
  if (error) return;
  cards[index].fault = healthy
                           ? std::nullopt
                           : std::optional<std::string>(reason.empty() ? "injected fault" : reason);
}

void set_metric(FuzzedDataProvider& input, xpud::Simulator& simulator,
                std::vector<Expected>& cards) {
  const auto index = input.ConsumeIntegralInRange<std::uint32_t>(0, kCards + 1);
  const std::string key = any_metric_key(input);
  const double value = input.ConsumeFloatingPoint<double>();
  auto error = simulator.set_metric(index, key, value);
  const bool known_key = std::find(names::metric::kAll.begin(), names::metric::kAll.end(), key) !=
                         names::metric::kAll.end();
  const bool valid =
      index < kCards && known_key && (std::isnan(value) || (std::isfinite(value) && value >= 0));
  check(error.has_value() != valid, "SetMetric accepted or refused the wrong call",
        key + " = " + std::to_string(value));
  if (error) return;
  if (std::isnan(value))
    cards[index].pinned.erase(key);
  else
    cards[index].pinned[key] = value;
}

void configure_virtual_functions(FuzzedDataProvider& input,
                                 const xpu::fuzz::ScratchDirectory& function) {
  const std::string total = input.ConsumeRandomLengthString(12);
  const std::string current = input.ConsumeRandomLengthString(12);
  const auto count = input.ConsumeIntegral<std::uint32_t>();
  function.write("sriov_totalvfs", total);
  function.write("sriov_numvfs", current);
  auto error = xpud::sysfs::write_sriov_numvfs(function.path(), "xpu0 (0000:3b:00.0)", count);
  const auto limit = xpud::sysfs::parse_vf_count(total);
  if (!error) {
    check(limit && count <= *limit, "a count above sriov_totalvfs was accepted",
          std::to_string(count) + " of '" + total + "'");
    check(xpud::sysfs::read_sriov_numvfs(function.path()) == count, "sriov_numvfs not written");
  } else if (limit && *limit > 0 && count > *limit) {
    check(error->kind == xpud::DriverChangeError::Kind::InvalidArgument,
          "refused as the wrong kind", error->message);
  }
}

// CreateInstance and DestroyInstance's checks, then the sim backend's instances: an id or limit
// the checks let through must be one the library can take (1 to 12 characters of the set, a
// limit from 1 byte to the card's memory), and the instances must be what the calls left.
void change_instance(FuzzedDataProvider& input, xpud::Backend& backend,
                     const std::vector<xpud::DeviceIdentity>& identities,
                     std::map<std::pair<unsigned, std::string>, std::uint64_t>& instances) {
  const auto& card = identities[input.ConsumeIntegralInRange<std::size_t>(0, kCards - 1)];
  const std::string id = input.ConsumeBool()
                             ? input.ConsumeRandomLengthString(16)
                             : std::to_string(input.ConsumeIntegral<std::uint16_t>());
  const bool create = input.ConsumeBool();
  const std::uint64_t limit = input.ConsumeBool() ? input.ConsumeIntegral<std::uint64_t>()
                                                  : input.ConsumeIntegralInRange<std::uint64_t>(
                                                        0, card.memory_total_bytes + 1);
  // The owner becomes exporter labels: what passes is empty or three Kubernetes names.
  const std::string owner = input.ConsumeRandomLengthString(80);
  if (!xpud::check_instance_owner(owner))
    check(owner.empty() ||
              (owner.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-./") ==
                   std::string::npos &&
               std::count(owner.begin(), owner.end(), '/') == 2 && owner.front() != '/' &&
               owner.back() != '/' && owner.find("//") == std::string::npos),
          "an owner that is no <namespace>/<pod>/<container> was accepted", owner);
  // CreateShareInstance's share reaches the log and the refusals that name it.
  const std::string share = input.ConsumeRandomLengthString(160);
  if (!xpud::check_instance_share(share))
    check(!share.empty() && share.size() <= xpud::kMaxInstanceShareBytes &&
              share.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789-._/") == std::string::npos,
          "a share key with other characters was accepted", share);
  if (auto refusal = xpud::check_instance_id(id)) {
    check(refusal->error_name == names::kErrorInvalidArgument, "refusal name");
    return;
  }
  check(!id.empty() && id.size() <= 12 &&
            id.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
                std::string::npos,
        "an instance id the library cannot take was accepted", id);
  auto* control = backend.cxpu_instances();
  check(control != nullptr, "the sim backend has no instances");
  const auto key = std::make_pair(card.index, id);
  if (!create) {
    auto error = control->destroy_instance(card, id);
    check(error.has_value() == (instances.erase(key) == 0), "destroy disagrees with the record",
          id);
    return;
  }
  if (xpud::check_instance_memory_limit(limit, card.memory_total_bytes)) {
    check(limit == 0 || limit > card.memory_total_bytes, "a good limit refused",
          std::to_string(limit));
    return;
  }
  check(limit >= 1 && limit <= card.memory_total_bytes, "a limit above the card accepted",
        std::to_string(limit));
  auto error = control->create_instance(card, id, limit);
  check(error.has_value() == (instances.count(key) == 1), "create disagrees with the record", id);
  if (!error) instances[key] = limit;
}

void route_proxy_call(FuzzedDataProvider& input) {
  auto pick = [&input](std::initializer_list<std::string_view> known) {
    if (input.ConsumeBool()) return input.ConsumeRandomLengthString(48);
    std::vector<std::string_view> choices(known);
    return std::string(choices[input.ConsumeIntegralInRange<std::size_t>(0, choices.size() - 1)]);
  };
  const std::string destination = pick({names::kBusName, proxy::kDriverName, ":1.42", ""});
  const std::string interface =
      pick({names::kManagerInterface, names::kSimulatorInterface, names::kDeviceInterface,
            "org.freedesktop.DBus", "org.freedesktop.DBus.Properties"});
  const std::string member =
      pick({names::member::kConfigureVirtualFunctions, names::member::kCreateInstance,
            names::member::kDestroyInstance, names::member::kListInstances, "GetMetrics",
            "SetHealth", "Hello", "RequestName", "Get", "GetAll", "Set"});
  const auto socket = input.ConsumeBool() ? proxy::ApiSocket::Sriov : proxy::ApiSocket::ReadOnly;
  const auto route = proxy::route_call(destination, interface, member, ":1.42", socket);
  switch (route.route) {
    case proxy::Route::BusDriver:
      check(destination == proxy::kDriverName, "answered as the bus for another destination");
      break;
    case proxy::Route::Forward:
    case proxy::Route::ForwardIfHostAllows:
      check(destination == names::kBusName || destination == ":1.42",
            "forwarded to another service", destination);
      check(interface != names::kSimulatorInterface && member != "Set" &&
                member != names::member::kCreateInstance &&
                member != names::member::kDestroyInstance,
            "forwarded a write", interface + "." + member);
      if (route.route == proxy::Route::ForwardIfHostAllows)
        check(interface == names::kManagerInterface &&
                  member == names::member::kConfigureVirtualFunctions,
              "gated something else than ConfigureVirtualFunctions");
      check(route.route == proxy::Route::Forward || socket == proxy::ApiSocket::Sriov,
            "the read-only socket let the write through");
      break;
    case proxy::Route::Deny:
      check(!route.reason.empty(), "a denial without a reason");
      break;
  }
}

void check_readings(xpud::Backend& backend, const std::vector<xpud::DeviceIdentity>& identities,
                    const std::vector<Expected>& cards) {
  for (const auto& identity : identities) {
    const auto reading = backend.read(identity);
    const Expected& expected = cards[identity.index];
    check(reading.fault == expected.fault, "health after SetHealth",
          reading.fault.value_or("(healthy)"));
    for (const auto& [key, value] : reading.metrics)
      check(std::isfinite(value) && value >= 0, "a metric that is not finite and not negative",
            key);
    for (const auto& [key, value] : expected.pinned)
      check(reading.metrics.count(key) == 1 && reading.metrics.at(key) == value,
            "a pinned metric not read back", key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xpu::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A PCI function's directory for ConfigureVirtualFunctions, rewritten by each call.
  static const xpu::fuzz::ScratchDirectory function("sriov");
  FuzzedDataProvider input(data, size);
  auto sim = xpud::make_sim_backend(xpud::SimOptions{kCards, "R200", 32768});
  auto identities = sim.backend->discover();
  check(identities.ok() && identities->size() == kCards, "sim discovery");
  std::vector<Expected> cards(kCards);
  std::map<std::pair<unsigned, std::string>, std::uint64_t> instances;

  for (int call = 0; call < 16 && input.remaining_bytes() > 0; ++call) {
    switch (input.ConsumeIntegralInRange<int>(0, 4)) {
      case 0:
        set_health(input, *sim.simulator, cards);
        break;
      case 1:
        set_metric(input, *sim.simulator, cards);
        break;
      case 2:
        configure_virtual_functions(input, function);
        break;
      case 3:
        route_proxy_call(input);
        break;
      case 4:
        change_instance(input, *sim.backend, *identities, instances);
        break;
    }
  }
  check_readings(*sim.backend, *identities, cards);
  return 0;
}
