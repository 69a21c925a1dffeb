#include "xpud/backends/sim/sim_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/fnv1a.h"
#include "common/names.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/backends/simulator.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kL3Bytes = 64 * kMiB;
constexpr double kIdleWatts = 22.0;
constexpr double kMaxWatts = 150.0;
constexpr double kBaseClockHz = 1.3e9;
constexpr double kBoostClockHz = 1.6e9;

// Cards split in two NUMA halves; inside a half every pair is linked, and card i is linked to
// its twin i+half in the other half (the 8-card layout of xpu-facts.md, generalised).
DeviceIdentity make_identity(const SimOptions& options, unsigned index) {
  const unsigned half = (options.devices + 1) / 2;
  DeviceIdentity id;
  id.index = index;
  const bool second_half = options.devices > 1 && index >= half;
  id.numa_node = second_half ? 1 : 0;
  const unsigned position = second_half ? index - half : index;
  for (unsigned other = 0; other < options.devices; ++other) {
    if (other == index) continue;
    const bool other_second = options.devices > 1 && other >= half;
    const unsigned other_position = other_second ? other - half : other;
    if (other_second == second_half || other_position == position)
      id.linked_devices.push_back(other);
  }
  // Stable, UUID-shaped and unique per (model, index).
  // FNV-1a, then a splitmix64 finaliser to spread bits.
  std::uint64_t h = xpu::fnv1a_64(options.model + "/" + std::to_string(index));
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-a%03x-%012llx", static_cast<unsigned>(h >> 32),
                static_cast<unsigned>(h >> 16) & 0xffffu, static_cast<unsigned>(h) & 0xfffu,
                index & 0xfffu, static_cast<unsigned long long>(0x5a0000000000ull + index));
  id.uuid = buf;
  std::snprintf(buf, sizeof buf, "SIM%s%05u", options.model.c_str(), index);
  id.serial = buf;
  id.model = options.model;
  // Buses spread over two root complexes, one per NUMA half, like a dual-socket server: the
  // first half's buses (0x10...) behind root bus 0x00, the second's (0x80...) behind root bus 0x80.
  std::snprintf(buf, sizeof buf, "%04x:%02x:00.0", index / 256,
                (second_half ? 0x80 : 0x10) + (position % 64) * 2);
  id.pci_bus_id = buf;
  std::snprintf(buf, sizeof buf, "pci%04x:%02x", index / 256, second_half ? 0x80 : 0x00);
  id.pcie_root = buf;
  id.memory_total_bytes = options.memory_mib * kMiB;
  id.device_nodes = {xpu::names::device_node(index), std::string(xpu::names::kControlNode)};
  return id;
}

class SimulatedCards final : public Backend, public Simulator, public CxpuInstanceControl {
 public:
  explicit SimulatedCards(const SimOptions& options) : options_(options) {
    for (unsigned i = 0; i < options.devices; ++i) {
      cards_.push_back(Card{make_identity(options, i),
                            {},
                            std::nullopt,
                            std::mt19937_64(0x5eed0000u + i),
                            0.2,
                            0.0,
                            35.0,
                            {}});
    }
    started_ = std::chrono::steady_clock::now();
  }

  std::string_view name() const override { return "sim"; }
  std::string driver_version() override { return "5.0.21-sim"; }

  xpu::Result<std::vector<DeviceIdentity>> discover() override {
    std::vector<DeviceIdentity> ids;
    for (const auto& card : cards_) ids.push_back(card.identity);
    return ids;
  }

  DeviceReading read(const DeviceIdentity& device) override {
    std::lock_guard lock(mutex_);
    if (device.index >= cards_.size()) {
      DeviceReading missing;
      missing.read_error = "no such card";
      return missing;
    }
    Card& card = cards_[device.index];
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
        {std::string(metric::kProcessCount), card.utilization > 0.05 ? 1.0 : 0.0},
    };
    for (const auto& [key, value] : card.pinned) reading.metrics[key] = value;
    return reading;
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
    if (index >= cards_.size()) return no_such_device(index);
    if (healthy) {
      cards_[index].fault.reset();
    } else {
      cards_[index].fault = reason.empty() ? "injected fault" : std::move(reason);
    }
    return std::nullopt;
  }

  std::optional<InjectionError> set_metric(unsigned index, std::string_view key,
                                           double value) override {
    std::lock_guard lock(mutex_);
    if (index >= cards_.size()) return no_such_device(index);
    if (std::find(metric::kAll.begin(), metric::kAll.end(), key) == metric::kAll.end())
      return InjectionError{InjectionError::Kind::InvalidArgument,
                            "unknown metric '" + std::string(key) + "'"};
    if (std::isnan(value)) {
      cards_[index].pinned.erase(std::string(key));
      return std::nullopt;
    }
    if (!std::isfinite(value) || value < 0)
      return InjectionError{InjectionError::Kind::InvalidArgument,
                            "metric value must be finite and not negative"};
    cards_[index].pinned[std::string(key)] = value;
    return std::nullopt;
  }

 private:
  struct Card {
    DeviceIdentity identity;
    std::map<std::string, double> pinned;
    std::optional<std::string> fault;
    std::mt19937_64 random;
    double utilization;
    double memory_fraction;
    double temperature;
    std::map<std::string, std::uint64_t> instances;  // cXPU instance id -> memory limit
  };

  Card* card_of(const DeviceIdentity& device) {
    if (device.index >= cards_.size() || cards_[device.index].identity.uuid != device.uuid)
      return nullptr;
    return &cards_[device.index];
  }
  static std::string device_name(const DeviceIdentity& device) {
    return xpu::names::device_name(device.index);
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

  SimOptions options_;
  std::mutex mutex_;  // guards cards_ between the driver thread and the bus thread
  std::vector<Card> cards_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace

SimBackend make_sim_backend(const SimOptions& options) {
  auto cards = std::make_shared<SimulatedCards>(options);
  return SimBackend{cards, cards};
}

}  // namespace xpud
