#include "xpud/sampling/release_check.h"

#include <algorithm>
#include <cmath>

#include "common/names.h"

namespace xpud {
namespace {

namespace metric = xpu::names::metric;

constexpr std::uint64_t kMiB = 1ull << 20;

// A metric as a count or a size: absent, negative or not finite is unknown.
std::optional<double> metric_value(const DeviceReading& reading, std::string_view key) {
  auto found = reading.metrics.find(std::string(key));
  if (found == reading.metrics.end() || !std::isfinite(found->second) || found->second < 0)
    return std::nullopt;
  return found->second;
}

std::string duration_text(std::chrono::milliseconds bound) {
  if (bound.count() % 1000 == 0) return std::to_string(bound.count() / 1000) + " s";
  return std::to_string(bound.count()) + " ms";
}

}  // namespace

ReleaseObservation release_observation(const DeviceIdentity& card, const DeviceReading& reading,
                                       unsigned own_pid) {
  ReleaseObservation seen;
  if (card.sriov_enabled) {
    seen.judged = false;
    return seen;
  }
  if (reading.processes) {
    seen.tenants = static_cast<unsigned>(
        std::count_if(reading.processes->begin(), reading.processes->end(),
                      [own_pid](const ProcessUsage& process) { return process.pid != own_pid; }));
  } else if (auto count = metric_value(reading, metric::kProcessCount)) {
    // Any count above 0 is somebody; the metric is bounded by the backends, so it fits.
    seen.tenants = *count > 0 ? std::max(1u, static_cast<unsigned>(std::min(*count, 1e9))) : 0u;
  }
  if (auto used = metric_value(reading, metric::kMemoryUsed)) {
    constexpr double kMax = 0x1p62;  // 4 EiB, far past any card, and exact as a double
    seen.memory_used_bytes = static_cast<std::uint64_t>(std::min(*used, kMax));
  }
  return seen;
}

void ReleaseCheck::set_settings(const ReleaseCheckSettings& settings) {
  settings_ = settings;
  if (!settings_.enabled) cards_.clear();
}

std::optional<std::string> ReleaseCheck::observe(const std::string& uuid,
                                                 const ReleaseObservation& seen,
                                                 Clock::time_point now) {
  if (!settings_.enabled || !seen.judged) {
    cards_.erase(uuid);
    return std::nullopt;
  }
  CardState& card = cards_[uuid];
  if (seen.tenants && *seen.tenants > 0) card.had_tenant = true;
  // Memory back at the idle level passes, whoever is on the card.
  if (seen.memory_used_bytes && *seen.memory_used_bytes <= settings_.idle_memory_bytes) {
    card.idle_since.reset();
    card.failure.reset();
    return std::nullopt;
  }
  // A process on the card (a new tenant) owns what it holds: no check while it runs. A process
  // list that could not be read cannot say there was none throughout, so it starts the wait
  // again too. A card that already failed stays failed until its memory comes back down: a
  // newcomer does not free what the last one left.
  if (!seen.tenants || *seen.tenants > 0) {
    card.idle_since.reset();
    return card.failure;
  }
  // No process; the memory unread this time: the wait goes on, judged at the next reading.
  if (!seen.memory_used_bytes || card.failure) return card.failure;
  if (!card.idle_since) card.idle_since = now;
  if (now - *card.idle_since < settings_.timeout) return std::nullopt;
  card.failure = "memory not released: " + std::to_string(*seen.memory_used_bytes / kMiB) +
                 " MiB in use with no process " + (card.had_tenant ? "" : std::string("for ")) +
                 duration_text(settings_.timeout) +
                 (card.had_tenant ? " after the last one left" : "");
  return card.failure;
}

std::optional<std::string> ReleaseCheck::current(const std::string& uuid) const {
  auto found = cards_.find(uuid);
  return found == cards_.end() ? std::nullopt : found->second.failure;
}

HealthState with_release_verdict(HealthState health, const std::optional<std::string>& failure) {
  if (!health.healthy || !failure) return health;
  health.healthy = false;
  health.reason = *failure;
  health.reason_kind = xpu::names::reason_kind::kMemoryNotReleased;
  return health;
}

}  // namespace xpud
