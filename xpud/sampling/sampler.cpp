#include "xpud/sampling/sampler.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "common/names.h"

namespace xpud {
namespace {

// GetMetrics carries the link figures and error counts beside the driver's readings, so that a
// client (the exporter) gets one card's numbers in one call; unknown ones stay absent.
void add_pcie_metrics(const PcieLinkState& pcie, std::map<std::string, double>& metrics) {
  visit_pcie_fields(pcie, [&](std::string_view key, const auto& value) {
    if (value) metrics[std::string(key)] = static_cast<double>(*value);
  });
}

}  // namespace

Sampler::Sampler(std::shared_ptr<Backend> backend, SamplerSettings settings,
                 std::function<void()> on_snapshot)
    : backend_(std::move(backend)),
      on_snapshot_(std::move(on_snapshot)),
      executor_(settings.call_timeout),
      health_(settings.failure_threshold),
      pcie_(settings.pcie),
      stall_(settings.stall_grace),
      release_(settings.release_check),
      own_pid_(static_cast<unsigned>(::getpid())),
      settings_(settings) {}

Sampler::~Sampler() {
  stop();
}

void Sampler::start() {
  last_cycle_ = std::chrono::steady_clock::now();
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  changed_.notify_all();
  executor_.interrupt();  // a hung driver call must not hold up the stop
  if (thread_.joinable()) thread_.join();
  std::vector<DriverJob> abandoned;
  {
    std::lock_guard lock(mutex_);
    abandoned.swap(jobs_);
  }
  for (auto& job : abandoned)
    job.done(xpu::Error{"'" + job.what + "' not started: xpud is stopping"});
}

void Sampler::run_driver_job(std::string what, std::function<void()> job,
                             std::function<void(const xpu::Status&)> done) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(DriverJob{std::move(what), std::move(job), std::move(done)});
  }
  changed_.notify_all();
}

void Sampler::update_settings(const SamplerSettings& settings) {
  {
    std::lock_guard lock(mutex_);
    settings_ = settings;
  }
  changed_.notify_all();
}

void Sampler::request_sample() {
  {
    std::lock_guard lock(mutex_);
    sample_requested_ = true;
  }
  changed_.notify_all();
}

void Sampler::request_discovery() {
  discovery_.request();
  request_sample();
}

void Sampler::mark_reset_failed(const std::string& uuid, std::string reason) {
  {
    std::lock_guard lock(mutex_);
    reset_failures_[uuid] = std::move(reason);
    sample_requested_ = true;
  }
  changed_.notify_all();
}

HealthState Sampler::with_reset_verdict(const std::string& uuid, HealthState health) {
  std::lock_guard lock(mutex_);
  auto mark = reset_failures_.find(uuid);
  if (mark == reset_failures_.end()) return health;
  if (health.healthy) {
    reset_failures_.erase(mark);
    return health;
  }
  health.reason = mark->second;
  health.reason_kind = xpu::names::reason_kind::kResetFailed;
  return health;
}

std::shared_ptr<const Snapshot> Sampler::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

std::shared_ptr<const Snapshot> Sampler::wait_first(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return latest_ != nullptr || stop_requested_; });
  return latest_;
}

std::string Sampler::driver_version() const {
  std::lock_guard lock(mutex_);
  return driver_version_;
}

std::chrono::steady_clock::time_point Sampler::last_cycle() const {
  return last_cycle_.load();
}

void Sampler::run() {
  std::unique_lock lock(mutex_);
  while (!stop_requested_) {
    SamplerSettings settings = settings_;
    sample_requested_ = false;
    std::vector<DriverJob> jobs;
    jobs.swap(jobs_);
    lock.unlock();
    executor_.set_timeout(settings.call_timeout);
    health_.set_failure_threshold(settings.failure_threshold);
    pcie_.set_policy(settings.pcie);
    stall_.set_grace(settings.stall_grace);
    release_.set_settings(settings.release_check);
    auto cycle_started = std::chrono::steady_clock::now();
    std::vector<xpu::Status> outcomes;
    outcomes.reserve(jobs.size());
    for (auto& job : jobs)
      outcomes.push_back(executor_.call(job.what, [work = job.job] {
        work();
        return xpu::Ok{};
      }));
    // A driver job (a VF count change) changes which cards exist: this cycle discovers, so the
    // job's caller is answered with the new devices already exported.
    if (!jobs.empty()) discovery_.request();
    auto snapshot = sample_cycle(settings);
    last_cycle_ = std::chrono::steady_clock::now();
    lock.lock();
    latest_ = std::move(snapshot);
    changed_.notify_all();
    lock.unlock();
    for (std::size_t i = 0; i < jobs.size(); ++i) jobs[i].done(outcomes[i]);
    on_snapshot_();
    lock.lock();
    changed_.wait_until(lock, cycle_started + settings.interval,
                        [&] { return stop_requested_ || sample_requested_ || !jobs_.empty(); });
  }
}

// A failed or empty read keeps the last known version rather than blanking it.
void Sampler::refresh_driver_version(std::string version) {
  if (version.empty()) return;
  std::lock_guard lock(mutex_);
  if (version == driver_version_) return;
  if (!driver_version_.empty())
    spdlog::info("driver version changed from {} to {}", driver_version_, version);
  driver_version_ = std::move(version);
}

std::shared_ptr<const Snapshot> Sampler::sample_cycle(const SamplerSettings& settings) {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->sequence = ++sequence_;
  stall_.observe(executor_.stuck_call(), std::chrono::steady_clock::now());

  const auto cycle_start = std::chrono::steady_clock::now();
  if (auto why = discovery_.take_due(cycle_start, settings.rescan_interval)) {
    spdlog::debug("discovering devices ({})", *why);
    discover(*snapshot);
    discovery_.discovered(cycle_start, snapshot->discovery_error.empty());
  }
  snapshot->driver_version = driver_version();

  for (const auto& identity : known_devices_) {
    const std::string device = xpu::names::device_name(identity.index);
    // A stalled driver says nothing about this card: no read, last health (driver_stall.h).
    const auto now = std::chrono::steady_clock::now();
    stall_.observe(executor_.stuck_call(), now);
    if (stall_.stalled()) {
      const HealthState health = stall_.card_health(
          with_release_verdict(health_.current(identity.uuid), release_.current(identity.uuid)),
          now);
      snapshot->devices.push_back(DeviceState{identity,
                                              {},
                                              health.healthy,
                                              health.reason,
                                              std::string(health.reason_kind),
                                              std::nullopt,
                                              {},
                                              {}});
      continue;
    }
    auto reading = executor_.call(
        "read " + device, [backend = backend_, identity] { return backend->read(identity); });
    DeviceReading value;
    if (reading) {
      value = std::move(*reading);
    } else {
      value.read_error = reading.error();
    }
    if (value.read_error) spdlog::debug("{}: read failed: {}", device, *value.read_error);
    discovery_.note_read(identity.uuid, value.gone);
    const HealthState* judged = &health_.update(identity.uuid, value);
    PcieVerdict pcie = pcie_.judge(identity.uuid, device, value.pcie, now);
    if (pcie.unhealthy) {
      judged = &health_.add_finding(identity.uuid, pcie.unhealthy->text, pcie.unhealthy->kind);
      // The card is Unhealthy for another reason (a driver fault says more): still shown.
      if (judged->reason_kind != pcie.unhealthy->kind)
        pcie.warnings.emplace(std::string(pcie.unhealthy->kind), std::move(pcie.unhealthy->text));
    }
    // The release check speaks only for a card nothing else has taken out (release_check.h).
    const HealthState health = with_reset_verdict(
        identity.uuid,
        with_release_verdict(
            *judged,
            release_.observe(identity.uuid, release_observation(identity, value, own_pid_), now)));
    add_pcie_metrics(value.pcie, value.metrics);
    snapshot->devices.push_back(DeviceState{identity, std::move(value.metrics), health.healthy,
                                            health.reason, std::string(health.reason_kind),
                                            std::move(value.processes), value.pcie,
                                            std::move(pcie.warnings)});
  }
  stall_.observe(executor_.stuck_call(), std::chrono::steady_clock::now());
  snapshot->driver_stalled = stall_.stalled();
  snapshot->backend = std::string(backend_->name());
  snapshot->library_path = backend_->library_path();
  snapshot->timestamp_usec =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  return snapshot;
}

void Sampler::discover(Snapshot& snapshot) {
  // Every job captures the backend by shared_ptr and its arguments by value: a call that times
  // out keeps running on the driver thread after we have moved on. The driver version is read in
  // the discovery job, because a driver reload (rmmod/modprobe of a new kunlun) may leave the
  // same cards behind: one procfs read or library call beside the several per card discovery
  // makes, inside the same time box (so the watchdog allowance still counts one call).
  struct Discovery {
    xpu::Result<std::vector<DeviceIdentity>> devices;
    std::string driver_version;
  };
  auto discovered = executor_.call("discover devices", [backend = backend_] {
    auto devices = backend->discover();
    return Discovery{std::move(devices), backend->driver_version()};
  });
  if (discovered) refresh_driver_version(std::move(discovered->driver_version));
  if (!discovered) {
    snapshot.discovery_error = discovered.error();
  } else if (!discovered->devices.ok()) {
    snapshot.discovery_error = discovered->devices.error();
  } else {
    for (const auto& gone : known_devices_) {
      bool still_there = false;
      for (const auto& now : discovered->devices.value()) still_there |= now.uuid == gone.uuid;
      if (!still_there) {
        health_.forget(gone.uuid);
        release_.forget(gone.uuid);
        pcie_.forget(gone.uuid);
        discovery_.forget(gone.uuid);
        std::lock_guard lock(mutex_);
        reset_failures_.erase(gone.uuid);
      }
    }
    known_devices_ = std::move(discovered->devices.value());
  }
  if (!snapshot.discovery_error.empty())
    spdlog::debug("device discovery failed, keeping the last known devices: {}",
                  snapshot.discovery_error);
}

}  // namespace xpud
