#include "xpud/backends/auto_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud {
namespace {

// A card as both backends place it: /dev/xpuN number and PCI address (the two chips of a K200
// share the address, not the number).
std::string card_key(const DeviceIdentity& device) {
  return device.pci_bus_id + "#" + std::to_string(device.index);
}

}  // namespace

AutoBackend::AutoBackend(std::unique_ptr<Backend> fallback, Opener open, std::string reason,
                         std::chrono::milliseconds attempt_timeout, RetryBackoff backoff)
    : fallback_(std::move(fallback)),
      open_(std::move(open)),
      reason_(std::move(reason)),
      backoff_(backoff),
      executor_(attempt_timeout) {
  retry_thread_ = std::thread([this] { retry_loop(); });
}

AutoBackend::~AutoBackend() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  executor_.interrupt();  // an attempt hung in xpumlInit must not hold up the stop
  retry_thread_.join();
}

std::string_view AutoBackend::name() const {
  return switched_ ? std::string_view("xpuml") : fallback_->name();
}

std::string AutoBackend::driver_version() { return active().driver_version(); }

xpu::Result<std::vector<DeviceIdentity>> AutoBackend::discover() {
  if (!upgraded_) {
    std::shared_ptr<Backend> ready;
    {
      std::lock_guard lock(mutex_);
      ready = std::move(ready_);
    }
    if (ready) {
      upgraded_ = std::move(ready);
      switched_ = true;
      spdlog::warn("backend auto: libxpuml initialises now; moving from {} to xpuml",
                   fallback_->name());
    }
  }
  auto found = active().discover();
  if (!found) return found;
  if (!upgraded_) {
    published_uuid_by_bus_and_index_.clear();
    for (const auto& device : *found) published_uuid_by_bus_and_index_[card_key(device)] = device.uuid;
    return found;
  }
  for (auto& device : *found) {
    auto published = published_uuid_by_bus_and_index_.find(card_key(device));
    if (published == published_uuid_by_bus_and_index_.end() || published->second == device.uuid)
      continue;
    if (library_uuid_.emplace(published->second, device.uuid).second)
      spdlog::info("{} keeps its id {} until xpud restarts (the library calls it {})",
                   xpu::names::device_name(device.index), published->second, device.uuid);
    device.uuid = published->second;
  }
  return found;
}

DeviceReading AutoBackend::read(const DeviceIdentity& device) {
  if (!upgraded_) return fallback_->read(device);
  auto library = library_uuid_.find(device.uuid);
  if (library == library_uuid_.end()) return upgraded_->read(device);
  DeviceIdentity as_library_knows_it = device;
  as_library_knows_it.uuid = library->second;
  return upgraded_->read(as_library_knows_it);
}

void AutoBackend::retry_loop() {
  auto wait = backoff_.first;
  std::string last_reason = reason_;
  unsigned attempts = 1;  // the factory's
  std::unique_lock lock(mutex_);
  while (true) {
    if (wake_.wait_for(lock, wait, [&] { return stopping_; })) return;
    lock.unlock();
    // The backend travels as a shared_ptr with the error beside it: a Result of a unique_ptr to
    // this very class's base trips GCC 12's -Wfree-nonheap-object here.
    auto attempt = executor_.call("xpumlInit", [open = open_] {
      auto opened = open();
      if (!opened) return std::pair<std::shared_ptr<Backend>, std::string>{nullptr, opened.error()};
      return std::pair<std::shared_ptr<Backend>, std::string>{std::move(*opened), ""};
    });
    lock.lock();
    if (stopping_) return;
    ++attempts;
    if (attempt && attempt->first) {
      spdlog::info("backend auto: libxpuml initialised at attempt {}", attempts);
      ready_ = std::move(attempt->first);
      return;
    }
    const std::string reason = attempt ? attempt->second : attempt.error();
    wait = std::min(wait * 2, backoff_.longest);
    // The same reason again is expected (the driver is still not loaded): debug only.
    if (reason != last_reason)
      spdlog::warn("backend auto: libxpuml still unusable ({}); next attempt in {} ms", reason,
                   wait.count());
    else
      spdlog::debug("backend auto: attempt {}: {}; next in {} ms", attempts, reason, wait.count());
    last_reason = reason;
  }
}

}  // namespace xpud
