#include "xpud/backends/auto_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/sysfs/sysfs_backend.h"
#include "xpud/backends/xpuml/xpuml_backend.h"

namespace xpud {
namespace {

// A card as both backends place it: /dev/xpuN number and PCI address (the two chips of a K200
// share the address, not the number).
std::string card_key(const DeviceIdentity& device) {
  return device.pci_bus_id + "#" + std::to_string(device.index);
}

}  // namespace

xpu::Result<std::unique_ptr<Backend>> make_auto_backend(
    const Config& config, RetryBackoff backoff,
    const std::shared_ptr<const topology::LinkTable>& links) {
  AutoBackend::Opener open = [libraries = config.xpuml_libraries, root = config.sysfs_root,
                              links](bool* init_failed) {
    return open_xpuml_backend(libraries, root, init_failed, links);
  };
  auto executor = std::make_unique<TimeBoxedExecutor>(config.call_timeout);
  auto attempts = std::make_shared<AutoBackend::Attempts>();
  std::string why;
  const bool returned = AutoBackend::attempt(*executor, open, attempts, why);
  if (returned) {
    std::lock_guard lock(attempts->mutex);
    if (attempts->ready) return std::move(attempts->ready);
  }

  auto sysfs = make_sysfs_backend(config.sysfs_root, links);
  if (!sysfs)
    return xpu::Error{"no backend available: xpuml: " + why + "; sysfs: " + sysfs.error()};
  bool retry = !returned;  // hung in xpumlInit: the library is there
  if (returned) {
    std::lock_guard lock(attempts->mutex);
    retry = attempts->init_failed;
  }
  if (!retry) {
    // No usable library: nothing changes without an install, which restarts xpud anyway.
    spdlog::info("backend auto: xpuml unavailable ({}), using sysfs", why);
    return sysfs;
  }
  spdlog::warn(
      "backend auto: libxpuml cannot initialise ({}); serving from sysfs without metrics "
      "and retrying after {} s, backing off to every {} s",
      why, backoff.first.count() / 1000, backoff.longest.count() / 1000);
  return std::unique_ptr<Backend>(std::make_unique<AutoBackend>(
      std::move(*sysfs), std::move(open), std::move(executor), std::move(attempts), why, backoff));
}

bool AutoBackend::attempt(TimeBoxedExecutor& executor, const Opener& open,
                          const std::shared_ptr<Attempts>& attempts, std::string& why) {
  // The job owns copies of everything it touches: after a time-out it runs on without us.
  auto returned = executor.call("xpumlInit", [open, attempts] {
    bool init_failed = false;
    auto opened = open(&init_failed);
    std::unique_ptr<Backend> unwanted;  // destroyed outside the lock (xpumlShutdown)
    std::lock_guard lock(attempts->mutex);
    if (opened) {
      (attempts->closed ? unwanted : attempts->ready) = std::move(*opened);
      attempts->error.clear();
    } else {
      attempts->error = opened.error();
      attempts->init_failed = init_failed;
    }
    return true;
  });
  if (!returned) {
    why = returned.error();
    return false;
  }
  std::lock_guard lock(attempts->mutex);
  why = attempts->error;
  return true;
}

AutoBackend::AutoBackend(std::unique_ptr<Backend> fallback, Opener open,
                         std::unique_ptr<TimeBoxedExecutor> executor,
                         std::shared_ptr<Attempts> attempts, std::string reason,
                         RetryBackoff backoff)
    : fallback_(std::move(fallback)),
      open_(std::move(open)),
      attempts_(std::move(attempts)),
      reason_(std::move(reason)),
      backoff_(backoff),
      executor_(std::move(executor)) {
  retry_thread_ = std::thread([this] { retry_loop(); });
}

AutoBackend::~AutoBackend() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  executor_->interrupt();  // an attempt hung in xpumlInit must not hold up the stop
  retry_thread_.join();
  std::unique_ptr<Backend> unadopted;
  {
    std::lock_guard lock(attempts_->mutex);
    attempts_->closed = true;
    unadopted = std::move(attempts_->ready);
  }
}

std::string_view AutoBackend::name() const {
  return switched_ ? std::string_view("xpuml") : fallback_->name();
}

std::string AutoBackend::library_path() const {
  // upgraded_ is set before switched_ and never changes after, so once switched_ reads true it
  // may be read from any thread.
  return switched_ ? upgraded_->library_path() : fallback_->library_path();
}

std::string AutoBackend::driver_version() {
  return active().driver_version();
}

xpu::Result<std::vector<DeviceIdentity>> AutoBackend::discover() {
  if (!upgraded_) {
    {
      std::lock_guard lock(attempts_->mutex);
      upgraded_ = std::move(attempts_->ready);
    }
    if (upgraded_) {
      switched_ = true;
      spdlog::warn("backend auto: libxpuml initialises now; moving from {} to xpuml",
                   fallback_->name());
    }
  }
  auto found = active().discover();
  if (!found) return found;
  if (!upgraded_) {
    published_uuid_by_card_.clear();
    for (const auto& device : *found) published_uuid_by_card_[card_key(device)] = device.uuid;
    return found;
  }
  for (auto& device : *found) {
    auto published = published_uuid_by_card_.find(card_key(device));
    if (published == published_uuid_by_card_.end() || published->second == device.uuid) continue;
    if (library_uuid_.emplace(published->second, device.uuid).second)
      spdlog::info("{} keeps its id {} until xpud restarts (the library calls it {})",
                   xpu::names::device_name(device.index), published->second, device.uuid);
    device.uuid = published->second;
  }
  return found;
}

DeviceReading AutoBackend::read(const DeviceIdentity& device) {
  if (!upgraded_) {
    DeviceReading reading = fallback_->read(device);
    // The move to xpuml happens in discover(), which the sampler runs only at start, on device
    // events and on the rescan: a ready library asks for one now.
    std::lock_guard lock(attempts_->mutex);
    if (attempts_->ready) reading.gone = true;
    return reading;
  }
  return upgraded_->read(as_the_library_knows_it(device));
}

DeviceIdentity AutoBackend::as_the_library_knows_it(const DeviceIdentity& device) const {
  auto library = library_uuid_.find(device.uuid);
  if (library == library_uuid_.end()) return device;
  DeviceIdentity renamed = device;
  renamed.uuid = library->second;
  return renamed;
}

CxpuInstanceControl* AutoBackend::cxpu_instances() {
  // As in library_path(): once switched_ reads true, upgraded_ is set for good.
  if (!switched_ || upgraded_->cxpu_instances() == nullptr) return nullptr;
  return this;
}

std::optional<DriverChangeError> AutoBackend::create_instance(const DeviceIdentity& device,
                                                              const std::string& id,
                                                              std::uint64_t memory_limit_bytes) {
  return upgraded_->cxpu_instances()->create_instance(as_the_library_knows_it(device), id,
                                                      memory_limit_bytes);
}

std::optional<DriverChangeError> AutoBackend::set_instance_memory_limit(
    const DeviceIdentity& device, const std::string& id, std::uint64_t memory_limit_bytes) {
  return upgraded_->cxpu_instances()->set_instance_memory_limit(as_the_library_knows_it(device), id,
                                                                memory_limit_bytes);
}

std::optional<DriverChangeError> AutoBackend::destroy_instance(const DeviceIdentity& device,
                                                               const std::string& id) {
  return upgraded_->cxpu_instances()->destroy_instance(as_the_library_knows_it(device), id);
}

void AutoBackend::retry_loop() {
  auto wait = backoff_.first;
  std::string last_reason = reason_;
  unsigned attempts = 1;  // the factory's
  std::unique_lock lock(mutex_);
  while (true) {
    if (wake_.wait_for(lock, wait, [&] { return stopping_; })) return;
    lock.unlock();
    {
      // An earlier attempt that overran its time box may have succeeded since.
      std::lock_guard attempts_lock(attempts_->mutex);
      if (attempts_->ready) return;
    }
    std::string why;
    const bool returned = attempt(*executor_, open_, attempts_, why);
    lock.lock();
    if (stopping_) return;
    ++attempts;
    if (returned && why.empty()) {
      spdlog::info("backend auto: libxpuml initialised at attempt {}", attempts);
      return;
    }
    wait = std::min(wait * 2, backoff_.longest);
    // The same reason again is expected (the driver is still not loaded): debug only. Durations
    // ("has not returned after 2000 ms") make no new reason.
    if (why.rfind("driver busy", 0) != 0 && why != last_reason)
      spdlog::warn("backend auto: libxpuml still unusable ({}); next attempt in {} ms", why,
                   wait.count());
    else
      spdlog::debug("backend auto: attempt {}: {}; next in {} ms", attempts, why, wait.count());
    last_reason = why;
  }
}

}  // namespace xpud
