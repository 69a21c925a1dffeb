#include "xpud/daemon.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/bus_address.h"
#include "common/logging.h"
#include "common/names.h"
#include "common/unique_fd.h"
#include "xpud/backends/backend_factory.h"
#include "xpud/bus/dbus_service.h"
#include "xpud/bus/vfio_object.h"
#include "xpud/cdi/cdi_spec_writer.h"
#include "xpud/cdi/vfio_cdi_spec.h"
#include "xpud/events/device_event_watcher.h"
#include "xpud/recovery/card_recovery.h"
#include "xpud/requests/driver_requests.h"
#include "xpud/requests/instance_registry.h"
#include "xpud/sampling/device_table.h"
#include "xpud/sampling/sampler.h"
#include "xpud/systemd_notifier.h"
#include "xpud/watchdog_allowance.h"

namespace xpud {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

SamplerSettings sampler_settings(const Config& config) {
  SamplerSettings settings;
  settings.interval = config.interval;
  settings.call_timeout = config.call_timeout;
  settings.failure_threshold = config.failure_threshold;
  settings.stall_grace = config.stall_grace;
  settings.rescan_interval = config.rescan_interval;
  settings.pcie = config.pcie;
  settings.release_check = ReleaseCheckSettings{config.release_check, config.release_timeout,
                                                config.release_idle_memory_mib << 20};
  return settings;
}

// Physical functions with SR-IOV on count among the devices but are offered to no pod: an
// operator who sees "8 devices" and 6 allocatable cards reads why here.
std::string status_line(const DeviceTable& table) {
  const unsigned sriov_pfs = table.sriov_enabled_count();
  std::string line = std::to_string(table.device_count()) + " devices, " +
                     std::to_string(table.healthy_device_count()) + " healthy, ";
  if (sriov_pfs > 0)
    line += std::to_string(sriov_pfs) + (sriov_pfs == 1 ? " PF" : " PFs") +
            " with SR-IOV on (not offered), ";
  return line + "backend " + table.manager().backend +
         (table.driver_stalled() ? ", driver stalled" : "");
}

// Keys that choose or build the backend; a reload cannot swap the backend under the clients.
bool backend_settings_differ(const Config& a, const Config& b) {
  return a.backend != b.backend || a.xpuml_libraries != b.xpuml_libraries ||
         a.sysfs_root != b.sysfs_root || a.topology_quirks != b.topology_quirks ||
         a.sim_devices != b.sim_devices || a.sim_model != b.sim_model ||
         a.sim_memory_mib != b.sim_memory_mib || a.instance_hook_program != b.instance_hook_program;
}

std::vector<DeviceIdentity> cards_of(const Snapshot& snapshot) {
  std::vector<DeviceIdentity> cards;
  cards.reserve(snapshot.devices.size());
  for (const auto& device : snapshot.devices) cards.push_back(device.identity);
  return cards;
}

std::unique_ptr<sdbus::IConnection> connect(const DaemonOptions& options) {
  if (options.bus_address) return xpu::connect_to_address(*options.bus_address);
  if (options.session_bus) return sdbus::createSessionBusConnection();
  return sdbus::createSystemBusConnection();
}

// sd-bus says only "Failed to open bus (No medium found)" when --session has no session bus:
// name the bus, the address tried, and what to do instead.
std::string describe_connect_failure(const DaemonOptions& options, const sdbus::Error& e) {
  const xpu::BusTarget target{options.session_bus ? xpu::BusKind::kSession : xpu::BusKind::kSystem,
                              options.bus_address};
  const std::string bus = xpu::describe_bus(target);
  if (!xpu::bus_address_used(target))
    return "cannot connect to " + bus +
           ": run xpud inside a session (dbus-run-session -- xpud --session) or give --bus-address "
           "ADDR";
  std::string hint;
  if (options.bus_address)
    hint =
        "is a bus running there (dbus-daemon --session --nofork --address=" + *options.bus_address +
        ")?";
  else if (options.session_bus)
    hint =
        "is the session bus running? (dbus-run-session -- xpud --session starts one), or give "
        "--bus-address ADDR";
  else
    hint = "is D-Bus running (systemctl status dbus)? or give --bus-address ADDR";
  return "cannot connect to " + bus + ": " + e.getMessage() + "; " + hint;
}

// Everything the main loop owns; lives on the main thread.
class Daemon {
 public:
  Daemon(const DaemonOptions& options, Config config, xpu::StopSignals& signals)
      : options_(options), config_(std::move(config)), signals_(signals) {}

  int run() {
    auto backend = make_backend(config_);
    if (!backend) {
      spdlog::critical("cannot start backend '{}': {}", config_.backend, backend.error());
      notifier_.status("Failed: " + backend.error());
      return 1;
    }
    std::shared_ptr<Backend> shared_backend = std::move(backend->backend);
    simulator_ = std::move(backend->simulator);
    std::shared_ptr<CardResetControl> card_reset = std::move(backend->card_reset);
    host_node_stand_in_ = std::move(backend->host_node_stand_in);
    spdlog::info("backend {} started", shared_backend->name());

    wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wakeup_.valid()) {
      spdlog::critical("eventfd failed: {}", std::strerror(errno));
      return 1;
    }
    sampler_ =
        std::make_unique<Sampler>(shared_backend, sampler_settings(config_), [fd = wakeup_.get()] {
          const std::uint64_t one = 1;
          [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
        });
    sampler_->start();
    driver_requests_ = std::make_unique<DriverRequests>(shared_backend, *sampler_);
    instances_ = std::make_unique<InstanceRegistry>(*driver_requests_);
    device_events_ = DeviceEventWatcher::start(
        [sampler = sampler_.get()](const DeviceEvent&) { sampler->request_discovery(); },
        "cards that come or go are found by the rescan every " +
            std::to_string(config_.rescan_interval.count()) +
            " ms ([sampling] rescan_interval_ms)");
    // Clients must never see an empty tree from a daemon that has cards: export after the first
    // sample, whose every driver call is time-boxed.
    bool stop_requested = false;
    auto first = wait_first_sample(milliseconds(60000), stop_requested);
    if (stop_requested) {
      spdlog::info("stopping before the first sample");
      notifier_.stopping();
      return leave(0);
    }
    if (!first) {
      spdlog::critical("no first sample within 60 s; giving up");
      return leave(1);
    }

    try {
      connection_ = connect(options_);
    } catch (const sdbus::Error& e) {
      const std::string message = describe_connect_failure(options_, e);
      spdlog::critical("{}", message);
      notifier_.status("Failed: " + message);
      return 1;
    }
    try {
      table_ = std::make_unique<DeviceTable>(ManagerModel{std::string(shared_backend->name()),
                                                          shared_backend->library_path(),
                                                          sampler_->driver_version()});
      recovery_ = std::make_unique<CardRecovery>(
          CardRecovery::Setup{config_.recovery, std::move(card_reset), config_.sysfs_root / "proc",
                              config_.sysfs_root, static_cast<unsigned>(::getpid()),
                              host_node_stand_in_},
          *driver_requests_, *sampler_, *table_, [this](unsigned index) {
            if (service_) service_->resets_changed(index);
          });
      service_ = std::make_unique<DbusService>(
          *connection_, *table_,
          ManagerFacts{config_.sysfs_root / "proc", config_.allow_cluster_reconfigure,
                       instance_hook()},
          simulator_.get(), [this] { sampler_->request_sample(); }, *driver_requests_, *instances_,
          *recovery_);
      publish(first);
      published_sequence_ = first->sequence;
      start_vfio();
      // Before the name and READY=1: a unit ordered after xpud finds the spec.
      apply_cdi_settings(*first);
      connection_->requestName(std::string(xpu::names::kBusName));
    } catch (const sdbus::Error& e) {
      spdlog::critical("cannot serve on the bus: {} ({})", e.getMessage(), e.getName());
      notifier_.status("Failed: " + e.getMessage());
      return 1;
    }
    spdlog::info("serving {} on {}: {}", xpu::names::kBusName,
                 options_.bus_address
                     ? *options_.bus_address
                     : (options_.session_bus ? "the session bus" : "the system bus"),
                 status_line(*table_));
    notifier_.ready(status_line(*table_));
    int status = loop();
    notifier_.stopping();
    spdlog::info("stopping");
    try {
      connection_->releaseName(std::string(xpu::names::kBusName));
    } catch (const sdbus::Error&) {
      // The bus may already be gone; nothing to release then.
    }
    vfio_.reset();
    service_.reset();
    return leave(status);
  }

 private:
  // Manager.InstanceHook: xpuctl, told the private bus when this xpud serves one. On the session
  // bus there is no address to tell, and a hook run by the runtime would not find that bus: none.
  std::vector<std::string> instance_hook() const {
    if (options_.session_bus) return {};
    std::vector<std::string> hook{config_.instance_hook_program.string()};
    if (options_.bus_address) hook.insert(hook.end(), {"--bus-address", *options_.bus_address});
    return hook;
  }

  // Every way out once the sampler runs. A driver call may still be running on an abandoned
  // thread, and may return at any moment into code whose globals (the logger, the library's own
  // state) exit() would be tearing down: then, with everything this process owns released,
  // leave without running destructors.
  int leave(int status) {
    sampler_->stop();
    if (sampler_->driver_stuck()) {
      spdlog::warn("a driver call never returned; exiting without waiting for it");
      spdlog::default_logger()->flush();
      std::_Exit(status);
    }
    return status;
  }

  // The first sample, or nullptr after `timeout` or when SIGTERM/SIGINT came first (then
  // `stop_requested`): a slow driver at start-up must not make xpud deaf to systemd's stop. A
  // SIGHUP here is dropped: the configuration was read a moment ago.
  std::shared_ptr<const Snapshot> wait_first_sample(milliseconds timeout, bool& stop_requested) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      if (auto first = sampler_->wait_first(milliseconds(0))) return first;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return nullptr;
      pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) return nullptr;
      if (fds[0].revents & POLLIN) {
        while (signals_.take()) {
        }
        if (signals_.stop_requested()) {
          stop_requested = true;
          return nullptr;
        }
      }
      if (fds[1].revents & POLLIN) {
        std::uint64_t count = 0;
        [[maybe_unused]] auto n = ::read(wakeup_.get(), &count, sizeof count);
      }
    }
  }

  int loop() {
    auto next_ping = Clock::now();
    while (true) {
      sdbus::IConnection::PollData bus{};
      try {
        while (connection_->processPendingRequest()) {
        }
        bus = connection_->getEventLoopPollData();
      } catch (const sdbus::Error& e) {
        spdlog::critical("lost the bus connection: {}", e.getMessage());
        return 1;
      }
      int timeout = bus.getPollTimeout();
      if (auto interval = notifier_.watchdog_interval()) {
        auto now = Clock::now();
        if (now >= next_ping) {
          feed_watchdog();
          next_ping = now + std::chrono::duration_cast<Clock::duration>(*interval / 2);
        }
        int until_ping =
            static_cast<int>(std::chrono::duration_cast<milliseconds>(next_ping - now).count()) + 1;
        timeout = timeout < 0 ? until_ping : std::min(timeout, until_ping);
      }
      pollfd fds[3] = {
          {bus.fd, bus.events, 0}, {signals_.fd(), POLLIN, 0}, {wakeup_.get(), POLLIN, 0}};
      if (::poll(fds, 3, timeout) < 0 && errno != EINTR) {
        spdlog::critical("poll failed: {}", std::strerror(errno));
        return 1;
      }
      if (fds[1].revents & POLLIN) {
        while (auto signo = signals_.take()) {
          if (*signo == SIGHUP) reload();
        }
        if (signals_.stop_requested()) return 0;
      }
      if (fds[2].revents & POLLIN) {
        std::uint64_t count = 0;
        [[maybe_unused]] auto n = ::read(wakeup_.get(), &count, sizeof count);
        publish_latest();
        driver_requests_->deliver();  // after publishing: the reply follows the new devices
        // After the replies: a reset's check starts from the reading that followed it.
        recovery_->observe(Clock::now());
      }
    }
  }

  void publish_latest() {
    auto snapshot = sampler_->latest();
    if (!snapshot || snapshot->sequence == published_sequence_) return;
    published_sequence_ = snapshot->sequence;
    try {
      publish(snapshot);
    } catch (const sdbus::Error& e) {
      spdlog::error("publishing a snapshot failed: {}", e.getMessage());
    }
    if (cdi_) cdi_->update(cards_of(*snapshot));
    notifier_.status(status_line(*table_));
  }

  // The table first, then what it changed: the cards' instances and the bus.
  void publish(std::shared_ptr<const Snapshot> snapshot) {
    const DeviceTableChanges changes = table_->apply(std::move(snapshot));
    // A card that is gone (or swapped) takes its instances with it.
    for (const auto& card : changes.removed) instances_->forget_card(card.index);
    service_->publish(changes);
    // A card that left the driver may be on vfio-pci now, one that came back has left it.
    const bool cards_came_or_went =
        !changes.removed.empty() ||
        std::any_of(changes.cards.begin(), changes.cards.end(),
                    [](const CardChange& card) { return card.kind == CardChange::Kind::kAdded; });
    if (vfio_ && cards_came_or_went) vfio_->refresh();
  }

  // The functions on vfio-pci (Vfio interface) and their CDI spec beside the cards'.
  void start_vfio() {
    vfio_ = std::make_unique<VfioObject>(
        *connection_, *table_, config_.sysfs_root, *driver_requests_, *instances_,
        [this](const std::vector<vfio::VfioFunction>& functions) { write_vfio_cdi(functions); });
    vfio_->refresh();
  }

  // kunlunxin-xpu-vfio.json in the cards' CDI directory, when xpud writes the cards' spec;
  // removed when no function is on vfio-pci.
  void write_vfio_cdi(const std::vector<vfio::VfioFunction>& functions) {
    auto cards_spec = cdi_path(config_);
    if (!cards_spec) return;
    CdiSpecFile file(cards_spec->parent_path() / xpu::names::vfio::kCdiFile);
    std::vector<VfioCdiDevice> devices;
    devices.reserve(functions.size());
    for (const auto& function : functions)
      devices.push_back({function.pci_bus_id, function.iommu_group});
    const std::string text = render_vfio_cdi_spec(devices);
    auto done = text.empty() ? file.remove() : file.write(text);
    if (!done.ok()) spdlog::warn("vfio: CDI spec {}: {}", file.path().string(), done.error());
  }

  // The spec's place for the running configuration: none when [cdi] turns it off (or `auto` on
  // a private bus). The spec stays on disk when xpud stops: the device nodes it names do not
  // depend on xpud, and a runtime starting a container while xpud restarts (an upgrade, a crash)
  // must still resolve kunlunxin.com/xpu names. It goes only when the configuration moves it or
  // turns it off, or when no card is left.
  std::optional<std::filesystem::path> cdi_path(const Config& config) const {
    const bool host_daemon = !options_.bus_address && !options_.session_bus;
    if (config.cdi_mode == CdiMode::kOff || (config.cdi_mode == CdiMode::kAuto && !host_daemon))
      return std::nullopt;
    return config.cdi_directory / config.cdi_file;
  }

  void apply_cdi_settings(const Snapshot& snapshot) {
    auto wanted = cdi_path(config_);
    if (cdi_ && wanted && cdi_->path() == *wanted) return;
    if (cdi_) cdi_->withdraw();
    cdi_.reset();
    if (!wanted) {
      spdlog::info("CDI spec: not written ([cdi] enabled = {}{})",
                   config_.cdi_mode == CdiMode::kOff ? "false" : "auto",
                   config_.cdi_mode == CdiMode::kOff ? "" : ", and xpud serves a private bus");
      return;
    }
    cdi_ = std::make_unique<CdiSpecWriter>(*wanted, host_node_stand_in_);
    cdi_->update(cards_of(snapshot));
  }

  // Only a sampler that still completes cycles keeps the watchdog fed; a wedged sampler gets us
  // restarted. Its worst legitimate cycle is bounded by the interval, the call timeout and the
  // card count (watchdog_allowance.h).
  void feed_watchdog() {
    auto allowed =
        watchdog_allowance(config_.interval, config_.call_timeout, table_->device_count());
    auto age = Clock::now() - sampler_->last_cycle();
    if (age <= allowed) {
      notifier_.watchdog_ping();
    } else {
      spdlog::error(
          "sampler has not completed a cycle for {} ms (allowance {} ms); not feeding the watchdog",
          std::chrono::duration_cast<milliseconds>(age).count(), allowed.count());
    }
  }

  void reload() {
    notifier_.reloading();
    spdlog::info("SIGHUP: reloading {}", options_.config_path.string());
    auto fresh = load_effective_config(options_);
    if (!fresh) {
      spdlog::error("reload failed, keeping the running configuration: {}", fresh.error());
      notifier_.ready(status_line(*table_));
      return;
    }
    if (backend_settings_differ(config_, *fresh))
      spdlog::warn(
          "backend settings changed; they take effect after a restart (systemctl restart xpud)");
    spdlog::set_level(fresh->log_level);
    sampler_->update_settings(sampler_settings(*fresh));
    service_->set_cluster_reconfigure_allowed(fresh->allow_cluster_reconfigure);
    recovery_->set_policy(fresh->recovery);
    config_ = std::move(*fresh);
    if (auto snapshot = sampler_->latest()) apply_cdi_settings(*snapshot);
    spdlog::info("configuration reloaded (interval {} ms, log level {})", config_.interval.count(),
                 spdlog::level::to_string_view(config_.log_level));
    notifier_.ready(status_line(*table_));
  }

  const DaemonOptions& options_;
  Config config_;
  xpu::StopSignals& signals_;
  SystemdNotifier notifier_;
  xpu::UniqueFd wakeup_;
  std::shared_ptr<Simulator> simulator_;  // sim backend only; outlives the service that uses it
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<DriverRequests> driver_requests_;
  // Hands its changes to driver_requests_, whose deliver() runs their replies (never after the
  // main loop has ended).
  std::unique_ptr<InstanceRegistry> instances_;
  std::unique_ptr<DeviceEventWatcher> device_events_;  // calls sampler_: declared after it
  std::unique_ptr<sdbus::IConnection> connection_;
  std::unique_ptr<DeviceTable> table_;  // the model the bus reads; main thread only
  // Resets ([recovery]): reads the table and counts in it; tells service_ (made after it, and
  // gone before it) when a card's Resets moved.
  std::unique_ptr<CardRecovery> recovery_;
  std::unique_ptr<DbusService> service_;
  std::unique_ptr<VfioObject> vfio_;    // its replies run in driver_requests_->deliver()
  std::string host_node_stand_in_;      // for the CDI spec's hostPath (backend_factory.h)
  std::unique_ptr<CdiSpecWriter> cdi_;  // null while no spec is written
  std::uint64_t published_sequence_ = 0;
};

}  // namespace

xpu::Result<Config> load_effective_config(const DaemonOptions& options) {
  auto config = load_config(options.config_path, options.config_path_given);
  if (!config) return config;
  if (options.backend) config->backend = *options.backend;
  if (options.log_level) config->log_level = *options.log_level;
  return config;
}

int run_daemon(const DaemonOptions& options, xpu::StopSignals& signals) {
  auto config = load_effective_config(options);
  if (!config) {
    xpu::setup_logging("xpud", spdlog::level::info);
    spdlog::critical("configuration error: {}", config.error());
    return 1;
  }
  xpu::setup_logging("xpud", config->log_level);
  Daemon daemon(options, std::move(*config), signals);
  return daemon.run();
}

}  // namespace xpud
