#include "xpud/backends/sim/sim_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/sim/sim_identity.h"
#include "xpud/backends/simulator.h"
#include "xpud/backends/virtual_functions.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kL3Bytes = 64 * kMiB;
constexpr double kIdleWatts = 22.0;
constexpr double kMaxWatts = 150.0;
constexpr double kBaseClockHz = 1.3e9;
constexpr double kBoostClockHz = 1.6e9;
// A physical card's link: 16.0 GT/s x16 (PCIe 4.0), trained to its maximum.
constexpr std::uint64_t kLinkTransfersPerSecond = 16000000000;
constexpr unsigned kLinkLanes = 16;
// Pins of PCIe figures must be whole numbers a double holds exactly.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

bool is_pcie_key(std::string_view key) {
  return std::find(metric::kPcie.begin(), metric::kPcie.end(), key) != metric::kPcie.end();
}

// The card's PCIe figures with the pinned ones in their place (SetMetric with a kPcie key: how
// a test or demo makes a link downtrain or AER counts rise).
PcieLinkState pinned_pcie(PcieLinkState pcie, const std::map<std::string, double>& pinned) {
  visit_pcie_fields(pcie, [&](std::string_view key, auto& field) {
    auto found = pinned.find(std::string(key));
    if (found == pinned.end()) return;
    using Value = typename std::remove_reference_t<decltype(field)>::value_type;
    field = static_cast<Value>(found->second);
  });
  return pcie;
}

// Cards are looked up by their host index, never by position: virtual functions come and go
// after the physical cards, and the index of a removed one may be handed out again.
class SimulatedCards final : public Backend,
                             public Simulator,
                             public VirtualFunctionControl,
                             public CxpuInstanceControl,
                             public CardResetControl {
 public:
  explicit SimulatedCards(const SimOptions& options) {
    for (unsigned i = 0; i < options.devices; ++i)
      cards_.push_back(make_card(sim::physical_card_identity(options, i)));
    started_ = std::chrono::steady_clock::now();
  }

  std::string_view name() const override { return "sim"; }
  std::string driver_version() override { return "5.0.21-sim"; }

  xpu::Result<std::vector<DeviceIdentity>> discover() override {
    std::lock_guard lock(mutex_);
    std::vector<DeviceIdentity> ids;
    for (const auto& card : cards_) ids.push_back(card.identity);
    return ids;
  }

  DeviceReading read(const DeviceIdentity& device) override {
    std::lock_guard lock(mutex_);
    Card* found = card_of(device);
    if (found == nullptr) {
      // A virtual function removed since the last discovery: discover again, as for hot-plug.
      DeviceReading missing;
      missing.read_error = "no such card";
      missing.gone = true;
      return missing;
    }
    Card& card = *found;
    DeviceReading reading;
    reading.fault = card.fault;
    advance(card);
    const auto total = static_cast<double>(card.identity.memory_total_bytes);
    reading.metrics = {
        {std::string(metric::kUtilization), card.utilization},
        {std::string(metric::kMemoryUtilization), std::clamp(card.utilization * 0.8, 0.0, 1.0)},
        {std::string(metric::kMemoryUsed), std::round(total * card.memory_fraction)},
        {std::string(metric::kMemoryTotal), total},
        {std::string(metric::kL3MemoryUsed),
         std::round(static_cast<double>(kL3Bytes) * std::min(1.0, card.utilization * 1.2))},
        {std::string(metric::kL3MemoryTotal), static_cast<double>(kL3Bytes)},
        {std::string(metric::kTemperature), std::round(card.temperature * 10) / 10},
        {std::string(metric::kPower),
         std::round((kIdleWatts + (kMaxWatts - kIdleWatts) * card.utilization) * 10) / 10},
        {std::string(metric::kClock), card.utilization > 0.05 ? kBoostClockHz : kBaseClockHz},
        // The simulated workload never leaves its card: a card with no process holds no memory
        // (an idle card reports 0 bytes used: docs/hardware.md), and this one's memory never
        // drops to 0, so counting its process out at low load would be a card that keeps memory
        // with no process, the fault xpud's release check reports (release_check.h). Tests
        // make that fault with SetMetric: process_count 0 with memory_used_bytes pinned.
        {std::string(metric::kProcessCount), 1.0},
    };
    for (const auto& [key, value] : card.pinned)
      if (!is_pcie_key(key)) reading.metrics[key] = value;
    reading.pcie = pinned_pcie(card.pcie, card.pinned);
    return reading;
  }

  // Like the kernel's sriov_numvfs: the functions exist at once, and the next discover() lists
  // them (xpud discovers right after the change).
  VirtualFunctionControl* virtual_functions() override { return this; }

  std::optional<DriverChangeError> set_virtual_function_count(const DeviceIdentity& device,
                                                              unsigned count) override {
    using Kind = DriverChangeError::Kind;
    std::lock_guard lock(mutex_);
    const std::string subject = subject_of(device);
    const Card* found = card_of(device);
    if (found == nullptr) return card_gone(device);
    if (found->identity.is_virtual_function)
      return DriverChangeError{Kind::NotSupported,
                               subject + " is a virtual function; configure its physical function"};
    const DeviceIdentity card = found->identity;  // cards_ changes below
    if (count > sim::kMaxVirtualFunctions)
      return DriverChangeError{
          Kind::InvalidArgument,
          subject + " supports at most " + std::to_string(sim::kMaxVirtualFunctions) +
              " virtual functions (sriov_totalvfs), not " + std::to_string(count)};
    if (count > 0 && sim::virtual_function_memory_bytes(card.memory_total_bytes, count) == 0)
      return DriverChangeError{Kind::InvalidArgument,
                               subject + " has too little memory for " + std::to_string(count) +
                                   " virtual functions of at least 1 GiB each"};
    const unsigned current = virtual_function_count(card);
    if (current == count) return std::nullopt;
    // A real driver refuses to take away functions in use (the kernel's EBUSY, which the sysfs
    // backend reports as Failed); an instance on a VF is the sim's only kind of use.
    for (const auto& vf : cards_)
      if (vf.identity.physical_function == card.pci_bus_id && !vf.instances.empty())
        return DriverChangeError{
            Kind::Failed, subject + ": its virtual functions are in use (" +
                              xpu::names::device_name(vf.identity.index) + " holds cXPU instance " +
                              vf.instances.begin()->first + "); destroy its instances first"};
    // From one non-zero count to another through 0, as the kernel requires and sysfs does.
    std::erase_if(cards_,
                  [&](const Card& c) { return c.identity.physical_function == card.pci_bus_id; });
    for (unsigned function = 1; function <= count; ++function)
      cards_.push_back(
          make_card(sim::virtual_function_identity(card, count, function, next_free_index())));
    card_at(card.index)->identity.sriov_enabled = count > 0;
    spdlog::info("{}: virtual functions {} -> {} (sim)", subject, current, count);
    return std::nullopt;
  }

  // cXPU instances are kept per card, as a driver would keep them; nothing bounds the simulated
  // memory, which is what the fake library is for.
  CxpuInstanceControl* cxpu_instances() override { return this; }

  std::optional<DriverChangeError> create_instance(const DeviceIdentity& device,
                                                   const std::string& id,
                                                   std::uint64_t memory_limit_bytes) override {
    std::lock_guard lock(mutex_);
    Card* card = card_of(device);
    if (card == nullptr) return card_gone(device);
    if (!card->instances.emplace(id, memory_limit_bytes).second)
      return DriverChangeError{DriverChangeError::Kind::Failed,
                               device_name(device) + ": cXPU instance " + id + " exists already"};
    return std::nullopt;
  }

  std::optional<DriverChangeError> set_instance_memory_limit(
      const DeviceIdentity& device, const std::string& id,
      std::uint64_t memory_limit_bytes) override {
    std::lock_guard lock(mutex_);
    Card* card = card_of(device);
    if (card == nullptr) return card_gone(device);
    auto instance = card->instances.find(id);
    if (instance == card->instances.end()) return no_such_instance(device, id);
    instance->second = memory_limit_bytes;
    return std::nullopt;
  }

  std::optional<DriverChangeError> destroy_instance(const DeviceIdentity& device,
                                                    const std::string& id) override {
    std::lock_guard lock(mutex_);
    Card* card = card_of(device);
    if (card == nullptr) return card_gone(device);
    if (card->instances.erase(id) == 0) return no_such_instance(device, id);
    return std::nullopt;
  }

  std::optional<InjectionError> set_health(unsigned index, bool healthy,
                                           std::string reason) override {
    std::lock_guard lock(mutex_);
    Card* card = card_at(index);
    if (card == nullptr) return no_such_device(index);
    if (healthy) {
      card->fault.reset();
    } else {
      card->fault = reason.empty() ? "injected fault" : std::move(reason);
    }
    return std::nullopt;
  }

  // A reset as a real card's: the driver's fault goes (unless set_reset_fails says the reset
  // does not cure it), its memory is freed (a pin of memory_used_bytes goes; with the process
  // count pinned to 0, the card reports the 0 bytes an idle card reports: docs/hardware.md) and
  // its cXPU instances are gone with the driver state that held them. Pins of the process
  // count and of the PCIe figures are the test's view of the world outside the card: they stay.
  std::optional<DriverChangeError> reset_card(const DeviceIdentity& device) override {
    std::lock_guard lock(mutex_);
    Card* card = card_of(device);
    if (card == nullptr) return card_gone(device);
    ++card->resets;
    if (card->reset_fails) {
      spdlog::info("{}: reset (sim), told to leave the card as it was", subject_of(device));
      return std::nullopt;
    }
    card->fault.reset();
    card->instances.clear();
    card->pinned.erase(std::string(metric::kMemoryUsed));
    auto processes = card->pinned.find(std::string(metric::kProcessCount));
    if (processes != card->pinned.end() && processes->second == 0)
      card->pinned[std::string(metric::kMemoryUsed)] = 0;
    spdlog::info("{}: reset (sim)", subject_of(device));
    return std::nullopt;
  }

  std::optional<InjectionError> set_reset_fails(unsigned index, bool fails) override {
    std::lock_guard lock(mutex_);
    Card* card = card_at(index);
    if (card == nullptr) return no_such_device(index);
    card->reset_fails = fails;
    return std::nullopt;
  }

  std::optional<InjectionError> set_metric(unsigned index, std::string_view key,
                                           double value) override {
    std::lock_guard lock(mutex_);
    Card* card = card_at(index);
    if (card == nullptr) return no_such_device(index);
    if (std::find(metric::kAll.begin(), metric::kAll.end(), key) == metric::kAll.end() &&
        !is_pcie_key(key))
      return InjectionError{InjectionError::Kind::InvalidArgument,
                            "unknown metric '" + std::string(key) + "'"};
    if (std::isnan(value)) {
      card->pinned.erase(std::string(key));
      return std::nullopt;
    }
    if (!std::isfinite(value) || value < 0)
      return InjectionError{InjectionError::Kind::InvalidArgument,
                            "metric value must be finite and not negative"};
    if (is_pcie_key(key) &&
        (value != std::floor(value) || value > kMaxExactInteger ||
         ((key == metric::kPcieLinkWidth || key == metric::kPcieLinkMaxWidth) && value > 32)))
      return InjectionError{InjectionError::Kind::InvalidArgument,
                            "'" + std::string(key) +
                                "' takes a whole number (lanes: at most 32; counts and speeds: at "
                                "most 2^53)"};
    card->pinned[std::string(key)] = value;
    return std::nullopt;
  }

 private:
  struct Card {
    DeviceIdentity identity{};
    std::map<std::string, double> pinned{};
    std::optional<std::string> fault{};
    std::mt19937_64 random{};
    double utilization = 0.2;
    double memory_fraction = 0.0;
    double temperature = 35.0;
    std::map<std::string, std::uint64_t> instances{};  // cXPU instance id -> memory limit
    PcieLinkState pcie{};                              // before pins
    bool reset_fails = false;                          // set_reset_fails
    unsigned resets = 0;
  };

  static Card make_card(DeviceIdentity identity) {
    Card card;
    card.random.seed(0x5eed0000u + identity.index);
    // As the kernel shows them: a virtual function's link registers are reserved (its link is
    // the PF's), so it has no speed or width; it counts no AER errors of its own here.
    if (!identity.is_virtual_function)
      card.pcie = PcieLinkState{
          kLinkTransfersPerSecond, kLinkTransfersPerSecond, kLinkLanes, kLinkLanes, 0, 0, 0};
    card.identity = std::move(identity);
    return card;
  }

  Card* card_at(unsigned index) {
    auto found = std::find_if(cards_.begin(), cards_.end(),
                              [index](const Card& card) { return card.identity.index == index; });
    return found == cards_.end() ? nullptr : &*found;
  }
  // The card discovery reported as `device`, if it is still there.
  Card* card_of(const DeviceIdentity& device) {
    Card* card = card_at(device.index);
    return card != nullptr && card->identity.uuid == device.uuid ? card : nullptr;
  }
  unsigned virtual_function_count(const DeviceIdentity& card) const {
    return static_cast<unsigned>(std::count_if(cards_.begin(), cards_.end(), [&](const Card& c) {
      return c.identity.physical_function == card.pci_bus_id;
    }));
  }
  // Above every index in use, so cards_ stays ordered by index as discover() promises.
  unsigned next_free_index() const {
    unsigned next = 0;
    for (const auto& card : cards_) next = std::max(next, card.identity.index + 1);
    return next;
  }

  static std::string device_name(const DeviceIdentity& device) {
    return xpu::names::device_name(device.index);
  }
  static std::string subject_of(const DeviceIdentity& device) {
    return device_name(device) + " (" + device.pci_bus_id + ")";
  }
  static DriverChangeError card_gone(const DeviceIdentity& device) {
    return {DriverChangeError::Kind::NoSuchDevice, device_name(device) + " is not simulated"};
  }
  static DriverChangeError no_such_instance(const DeviceIdentity& device, const std::string& id) {
    return {DriverChangeError::Kind::NoSuchInstance,
            device_name(device) + " has no cXPU instance " + id};
  }

  static InjectionError no_such_device(unsigned index) {
    return InjectionError{InjectionError::Kind::NoSuchDevice,
                          "no device with index " + std::to_string(index)};
  }

  // A slow cycle of busy and idle phases per card plus noise, memory that follows the load with
  // lag, and temperature that approaches a load-dependent target.
  void advance(Card& card) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    std::normal_distribution<double> noise(0.0, 0.03);
    const double phase = 0.7 * card.identity.index;
    const double target = 0.45 + 0.4 * std::sin(t / 40.0 + phase);
    card.utilization =
        std::clamp(0.7 * card.utilization + 0.3 * target + noise(card.random), 0.0, 1.0);
    card.memory_fraction =
        std::clamp(0.9 * card.memory_fraction + 0.1 * (0.1 + 0.7 * card.utilization), 0.0, 1.0);
    const double target_temp = 35.0 + 45.0 * card.utilization;
    card.temperature += 0.2 * (target_temp - card.temperature);
  }

  std::mutex mutex_;  // guards cards_ between the driver thread and the bus thread
  std::vector<Card> cards_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace

SimBackend make_sim_backend(const SimOptions& options) {
  auto cards = std::make_shared<SimulatedCards>(options);
  return SimBackend{cards, cards, cards};
}

}  // namespace xpud
