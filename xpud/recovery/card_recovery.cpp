#include "xpud/recovery/card_recovery.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/logging.h"
#include "common/names.h"
#include "xpud/recovery/device_node_users.h"

namespace xpud {
namespace {

namespace names = xpu::names;
using Kind = DriverChangeError::Kind;
using std::chrono::duration_cast;
using std::chrono::seconds;

// Health reasons a reset can cure (card_recovery.h says why these and no others).
bool automatic_reset_cures(std::string_view kind) {
  return kind == names::reason_kind::kDriverFault || kind == names::reason_kind::kReadFailures ||
         kind == names::reason_kind::kMemoryNotReleased;
}

const DeviceState* state_of(const DeviceTable& table, unsigned index) {
  const auto& snapshot = table.snapshot();
  if (!snapshot) return nullptr;
  for (const auto& device : snapshot->devices)
    if (device.identity.index == index) return &device;
  return nullptr;
}

// What the driver's last reading says runs on the card, without xpud: the pids when it lists
// them, else how many it counts (which cannot tell xpud apart); nullopt when it does not tell.
std::optional<std::string> driver_users(const DeviceState& state, unsigned own_pid) {
  if (state.processes) {
    std::string pids;
    for (const auto& process : *state.processes) {
      if (process.pid == own_pid) continue;
      pids += (pids.empty() ? "" : ", ") + std::to_string(process.pid);
    }
    if (pids.empty()) return std::nullopt;
    return "the driver lists processes on it (pids " + pids + ")";
  }
  auto count = state.metrics.find(std::string(names::metric::kProcessCount));
  if (count != state.metrics.end() && count->second > 0)
    return "the driver counts " +
           std::to_string(static_cast<long long>(std::llround(count->second))) +
           " process(es) on it";
  return std::nullopt;
}

// The card's own nodes (not the control node every card shares) as they are on this host.
std::vector<std::filesystem::path> own_nodes(const DeviceIdentity& card,
                                             const std::filesystem::path& root) {
  std::vector<std::filesystem::path> nodes;
  for (const auto& node : card.device_nodes) {
    if (node == names::kControlNode || node.empty() || node.front() != '/') continue;
    nodes.push_back(root / std::filesystem::path(node).relative_path());
  }
  return nodes;
}

std::string join_pids(const std::vector<unsigned>& pids) {
  std::string text;
  for (unsigned pid : pids) text += (text.empty() ? "" : ", ") + std::to_string(pid);
  return text;
}

}  // namespace

CardRecovery::CardRecovery(Setup setup, DriverRequests& requests, Sampler& sampler,
                           DeviceTable& table, std::function<void(unsigned)> resets_changed)
    : setup_(std::move(setup)),
      requests_(requests),
      sampler_(sampler),
      table_(table),
      resets_changed_(std::move(resets_changed)),
      budget_(setup_.policy.max_resets_per_hour) {}

void CardRecovery::set_policy(const RecoveryPolicy& policy) {
  if (policy == setup_.policy) return;
  setup_.policy = policy;
  budget_.set_limit(policy.max_resets_per_hour);
  spdlog::info("[recovery] enabled = {}, auto = {}, max_resets_per_hour = {}", policy.enabled,
               policy.automatic, policy.max_resets_per_hour);
}

void CardRecovery::count(const std::string& uuid, std::string_view result) {
  if (auto index = table_.count_reset(uuid, result)) resets_changed_(*index);
}

std::optional<ResetRefusal> CardRecovery::guard(const PublishedDevice& card,
                                                Clock::time_point now) {
  const std::string name = names::device_name(card.identity.index);
  if (!setup_.policy.enabled)
    return ResetRefusal{std::string(names::kErrorNotSupported),
                        "resets are off: [recovery] enabled = false in xpud.conf"};
  if (!setup_.control)
    return ResetRefusal{std::string(names::kErrorNotSupported),
                        "the " + table_.manager().backend + " backend cannot reset cards"};
  if (under_way_.contains(card.identity.uuid))
    return ResetRefusal{std::string(names::kErrorInUse), "a reset of " + name + " is under way"};
  if (const DeviceState* state = state_of(table_, card.identity.index))
    if (auto users = driver_users(*state, setup_.own_pid))
      return ResetRefusal{std::string(names::kErrorInUse), name + " is in use: " + *users};
  if (auto next = budget_.next_allowed(card.identity.uuid, now))
    return ResetRefusal{std::string(names::bus::kErrorLimitsExceeded),
                        name + " was reset " + std::to_string(budget_.limit()) +
                            " time(s) within the last hour ([recovery] max_resets_per_hour = " +
                            std::to_string(budget_.limit()) + "); the next reset may be in " +
                            std::to_string(duration_cast<seconds>(*next - now).count() + 1) + " s"};
  return std::nullopt;
}

std::optional<ResetRefusal> CardRecovery::request(unsigned index, const std::string& who,
                                                  Reply done) {
  const PublishedDevice* card = table_.find(index);
  if (card == nullptr)
    return ResetRefusal{std::string(names::kErrorNoSuchDevice),
                        "no device " + names::device_name(index)};
  const auto now = Clock::now();
  const std::string origin = "ResetDevice by " + who;
  if (auto refusal = guard(*card, now)) {
    xpu::log_device_event(spdlog::level::warn, names::device_name(index), card->identity.uuid,
                          "reset refused (" + origin + "): " + refusal->message);
    count(card->identity.uuid, names::reset_result::kRefused);
    return refusal;
  }
  start(*card, origin, std::move(done), now);
  return std::nullopt;
}

void CardRecovery::start(const PublishedDevice& card, std::string origin, Reply done,
                         Clock::time_point now) {
  const DeviceIdentity identity = card.identity;
  const std::string name = names::device_name(identity.index);
  budget_.spend(identity.uuid, now);
  under_way_.insert(identity.uuid);
  checks_.erase(identity.uuid);
  xpu::log_device_event(spdlog::level::warn, name, identity.uuid,
                        "reset: " + origin +
                            (card.healthy ? "" : "; Unhealthy: " + card.health_reason) +
                            "; resetting");
  auto job = [control = setup_.control, proc_root = setup_.proc_root,
              nodes = own_nodes(identity, setup_.node_root), identity, name,
              own_pid = setup_.own_pid,
              stand_in = setup_.node_stand_in](Backend&) -> std::optional<DriverChangeError> {
    // Right before the write, on the driver thread: the smallest window for a process to open
    // the card unseen.
    const DeviceNodeUsers users = find_device_node_users(proc_root, nodes, own_pid, stand_in);
    if (users.vanished > 0)
      spdlog::debug("{}: {} processes or files went away while /proc was read", name,
                    users.vanished);
    if (!users.pids.empty())
      return DriverChangeError{
          Kind::InUse,
          name + " is in use: process(es) " + join_pids(users.pids) + " have its device node open"};
    if (users.unreadable > 0)
      return DriverChangeError{Kind::InUse,
                               name + ": the open files of " + std::to_string(users.unreadable) +
                                   " process(es) could not be read from " + proc_root.string() +
                                   "; not resetting a card that may be in use"};
    return control->reset_card(identity);
  };
  requests_.start("reset " + name, std::move(job),
                  [this, identity, origin = std::move(origin), done = std::move(done),
                   spent_at = now](const std::optional<DriverChangeError>& error) {
                    finished(identity, origin, error, spent_at);
                    if (done) done(error);
                  });
}

void CardRecovery::finished(const DeviceIdentity& identity, const std::string& origin,
                            const std::optional<DriverChangeError>& error,
                            Clock::time_point spent_at) {
  const std::string name = names::device_name(identity.index);
  under_way_.erase(identity.uuid);
  if (error) {
    // Nothing reached the card: the reset does not count against the hour's.
    const bool not_attempted = error->kind == Kind::InUse || error->kind == Kind::NotSupported ||
                               error->kind == Kind::NoSuchDevice;
    if (not_attempted) {
      budget_.refund(identity.uuid, spent_at);
      xpu::log_device_event(spdlog::level::warn, name, identity.uuid,
                            "reset refused (" + origin + "): " + error->message);
      count(identity.uuid, names::reset_result::kRefused);
      return;
    }
    xpu::log_device_event(spdlog::level::err, name, identity.uuid,
                          "reset failed (" + origin + "): " + error->message);
    count(identity.uuid, names::reset_result::kFailed);
    sampler_.mark_reset_failed(identity.uuid, "reset failed: " + error->message);
    return;
  }
  xpu::log_device_event(spdlog::level::info, name, identity.uuid,
                        "reset: done (" + origin + "); checking the card for up to " +
                            std::to_string(setup_.policy.check_timeout.count()) + " ms");
  bool done = false;
  const Check started{Clock::now() + setup_.policy.check_timeout, origin};
  check(identity.uuid, started, Clock::now(), done);
  if (!done) checks_.emplace(identity.uuid, started);
}

void CardRecovery::check(const std::string& uuid, const Check& check, Clock::time_point now,
                         bool& done) {
  const PublishedDevice* card = nullptr;
  for (const auto& [index, device] : table_.devices())
    if (device.identity.uuid == uuid) card = &device;
  done = true;
  if (card == nullptr) {
    spdlog::warn("reset card {} is gone ({}); its check ends", uuid, check.origin);
    return;
  }
  const std::string name = names::device_name(card->identity.index);
  if (card->healthy) {
    xpu::log_device_event(spdlog::level::info, name, uuid,
                          "reset: Healthy after the reset (" + check.origin + "); offered again");
    count(uuid, names::reset_result::kSucceeded);
    return;
  }
  if (now < check.deadline) {
    done = false;
    return;
  }
  const std::string reason = "reset failed: still Unhealthy " +
                             std::to_string(setup_.policy.check_timeout.count()) +
                             " ms after the reset (" + card->health_reason + ")";
  xpu::log_device_event(spdlog::level::err, name, uuid, reason + "; left out");
  count(uuid, names::reset_result::kFailed);
  sampler_.mark_reset_failed(uuid, reason);
}

void CardRecovery::observe(Clock::time_point now) {
  for (auto it = checks_.begin(); it != checks_.end();) {
    bool done = false;
    check(it->first, it->second, now, done);
    it = done ? checks_.erase(it) : std::next(it);
  }
  automatic(now);
}

void CardRecovery::automatic(Clock::time_point now) {
  std::set<std::string> present;
  for (const auto& [index, card] : table_.devices()) {
    const std::string& uuid = card.identity.uuid;
    present.insert(uuid);
    if (!setup_.policy.enabled || !setup_.policy.automatic || card.healthy ||
        !automatic_reset_cures(card.health_reason_kind)) {
      unhealthy_since_.erase(uuid);
      auto_refused_.erase(uuid);
      continue;
    }
    const auto since = unhealthy_since_.try_emplace(uuid, now).first->second;
    if (now - since < setup_.policy.unhealthy_for || under_way_.contains(uuid) ||
        checks_.contains(uuid))
      continue;
    const std::string name = names::device_name(index);
    const std::string origin =
        "automatic: Unhealthy (" + std::string(card.health_reason_kind) + ") for " +
        std::to_string(duration_cast<seconds>(now - since).count()) + " s with no user";
    if (auto refusal = guard(card, now)) {
      // Once per cause: the guard is asked again every cycle while the card waits.
      auto [noted, fresh] = auto_refused_.try_emplace(uuid, refusal->error_name);
      if (fresh || noted->second != refusal->error_name) {
        noted->second = refusal->error_name;
        xpu::log_device_event(spdlog::level::warn, name, uuid,
                              "reset refused (" + origin + "): " + refusal->message);
        count(uuid, names::reset_result::kRefused);
      }
      continue;
    }
    auto_refused_.erase(uuid);
    unhealthy_since_.erase(uuid);
    start(card, origin, nullptr, now);
  }
  std::erase_if(unhealthy_since_,
                [&](const auto& entry) { return !present.contains(entry.first); });
  std::erase_if(auto_refused_, [&](const auto& entry) { return !present.contains(entry.first); });
}

}  // namespace xpud
