#include "common/xpud_client.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/bus_address.h"
#include "common/names.h"
#include "common/unique_fd.h"

namespace xpu {
namespace {

using ManagedObjects =
    std::map<sdbus::ObjectPath, std::map<std::string, std::map<std::string, sdbus::Variant>>>;
using Properties = std::map<std::string, sdbus::Variant>;

constexpr const char* kObjectManagerInterface = "org.freedesktop.DBus.ObjectManager";
constexpr const char* kPropertiesInterface = "org.freedesktop.DBus.Properties";

std::unique_ptr<sdbus::IConnection> open_connection(const ClientOptions& options) {
  if (options.bus_address) return connect_to_address(*options.bus_address);
  return sdbus::createSystemBusConnection();
}

std::string bus_description(const ClientOptions& options) {
  return describe_bus(BusTarget{BusKind::kSystem, options.bus_address});
}

// No bus at all is what an operator sees first when xpud is not installed or not started (or a
// pod lacks the socket): name the address tried and where to look.
std::string describe_connect_failure(const sdbus::Error& e, const ClientOptions& options) {
  std::string hint = options.bus_address
                         ? "is a bus running there, with xpud on it (xpud --bus-address " +
                               *options.bus_address + ")?"
                         : "xpud may not be running (systemctl status xpud), or it serves another "
                           "bus (--bus-address ADDR)";
  return "cannot connect to " + bus_description(options) + ": " + e.getMessage() + "; " + hint;
}

// Turns a D-Bus failure into a message an operator can act on.
std::string describe(const sdbus::Error& e, const ClientOptions& options) {
  const std::string& name = e.getName();
  if (name == "org.freedesktop.DBus.Error.ServiceUnknown" ||
      name == "org.freedesktop.DBus.Error.NameHasNoOwner")
    return "xpud is not running (" + std::string(names::kBusName) + " has no owner on " +
           bus_description(options) + ")";
  if (name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Timeout")
    return "xpud did not answer in time (" + e.getMessage() + ")";
  if (name == "org.freedesktop.DBus.Error.AccessDenied")
    return "access denied by the bus policy: " + e.getMessage();
  return e.getMessage().empty() ? name : e.getMessage() + " (" + name + ")";
}

template <typename T>
bool get_property(const Properties& properties, const char* key, T& out) {
  auto it = properties.find(key);
  if (it == properties.end() || !it->second.containsValueOfType<T>()) return false;
  out = it->second.get<T>();
  return true;
}

// Reads one device object; nullopt (with the reason) when xpud sent something malformed.
Result<DeviceInfo> parse_device(const Properties& p) {
  DeviceInfo d;
  uint32_t index = 0;
  int32_t numa = -1;
  uint64_t memory = 0;
  std::vector<uint32_t> linked;
  std::string health;
  bool ok = get_property(p, "Index", index) && get_property(p, "Name", d.name) &&
            get_property(p, "Uuid", d.uuid) && get_property(p, "Serial", d.serial) &&
            get_property(p, "Model", d.model) && get_property(p, "PciBusId", d.pci_bus_id) &&
            get_property(p, "NumaNode", numa) && get_property(p, "MemoryTotalBytes", memory) &&
            get_property(p, "DeviceNodes", d.device_nodes) &&
            get_property(p, "LinkedDevices", linked) && get_property(p, "Health", health) &&
            get_property(p, "HealthReason", d.health_reason) &&
            get_property(p, "IsVirtualFunction", d.is_virtual_function);
  if (!ok) return Error{"missing or mistyped property"};
  // Added later than the rest: optional, so a client keeps working with an older xpud.
  get_property(p, "HealthReasonKind", d.health_reason_kind);
  get_property(p, "HealthTransitions", d.health_transitions);
  if (d.uuid.empty()) return Error{"empty Uuid"};
  if (health != names::kHealthy && health != names::kUnhealthy)
    return Error{"Health is '" + health + "'"};
  d.index = index;
  d.numa_node = numa;
  d.memory_total_bytes = memory;
  d.linked_devices.assign(linked.begin(), linked.end());
  d.healthy = health == names::kHealthy;
  return d;
}

Result<std::vector<DeviceInfo>> fetch_devices(sdbus::IConnection& connection,
                                              std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  ManagedObjects objects;
  proxy->callMethod("GetManagedObjects")
      .onInterface(kObjectManagerInterface)
      .withTimeout(timeout)
      .storeResultsTo(objects);
  std::vector<DeviceInfo> devices;
  for (const auto& [path, interfaces] : objects) {
    auto it = interfaces.find(std::string(names::kDeviceInterface));
    if (it == interfaces.end()) continue;
    auto device = parse_device(it->second);
    if (!device) {
      spdlog::warn("ignoring device object {}: {}", std::string(path), device.error());
      continue;
    }
    devices.push_back(std::move(*device));
  }
  std::sort(devices.begin(), devices.end(),
            [](const DeviceInfo& a, const DeviceInfo& b) { return a.index < b.index; });
  return devices;
}

Result<ManagerInfo> fetch_manager(sdbus::IConnection& connection,
                                  std::chrono::milliseconds timeout) {
  auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                  std::string(names::kManagerPath));
  Properties properties;
  proxy->callMethod("GetAll")
      .onInterface(kPropertiesInterface)
      .withTimeout(timeout)
      .withArguments(std::string(names::kManagerInterface))
      .storeResultsTo(properties);
  ManagerInfo info;
  uint32_t count = 0, healthy = 0;
  if (!get_property(properties, "Version", info.version) ||
      !get_property(properties, "Backend", info.backend) ||
      !get_property(properties, "DriverVersion", info.driver_version) ||
      !get_property(properties, "DeviceCount", count) ||
      !get_property(properties, "HealthyDeviceCount", healthy))
    return Error{"xpud's Manager properties are missing or mistyped"};
  info.device_count = count;
  info.healthy_device_count = healthy;
  return info;
}

}  // namespace

class XpudClient::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)) {}

  ~Impl() {
    if (watcher_.joinable()) {
      stop_ = true;
      const std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(wakeup_.get(), &one, sizeof one);
      watcher_.join();
    }
  }

  // One-shot calls share one connection, opened on first use and dropped after a failure so the
  // next call reconnects (the bus may have restarted). sdbus-c++ connections are not thread-safe:
  // the mutex serialises callers.
  template <typename T, typename Fn>
  Result<T> with_connection(Fn&& fn) {
    std::lock_guard lock(call_mutex_);
    if (!call_connection_) {
      try {
        call_connection_ = open_connection(options_);
      } catch (const sdbus::Error& e) {
        return Error{describe_connect_failure(e, options_)};
      }
    }
    try {
      return fn(*call_connection_);
    } catch (const sdbus::Error& e) {
      // Answers from the bus or xpud leave the connection usable; anything else (I/O errors,
      // disconnection) means the next call should start over on a new one.
      const std::string& name = e.getName();
      const bool answered = name == "org.freedesktop.DBus.Error.ServiceUnknown" ||
                            name == "org.freedesktop.DBus.Error.NameHasNoOwner" ||
                            name == "org.freedesktop.DBus.Error.AccessDenied" ||
                            name == "org.freedesktop.DBus.Error.UnknownMethod" ||
                            name == "org.freedesktop.DBus.Error.UnknownObject" ||
                            name == "org.freedesktop.DBus.Error.InvalidArgs" ||
                            name.rfind("com.kunlunxin.", 0) == 0;
      if (!answered) call_connection_.reset();
      return Error{describe(e, options_)};
    }
  }

  Result<MetricsSnapshot> get_metrics() {
    return with_connection<MetricsSnapshot>([&](sdbus::IConnection& connection) -> Result<MetricsSnapshot> {
      auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                      std::string(names::kManagerPath));
      MetricsSnapshot snapshot;
      std::vector<sdbus::Struct<uint32_t, std::map<std::string, double>>> devices;
      proxy->callMethod("GetMetrics")
          .onInterface(std::string(names::kManagerInterface))
          .withTimeout(options_.call_timeout)
          .storeResultsTo(snapshot.timestamp_usec, devices);
      snapshot.devices.reserve(devices.size());
      for (auto& device : devices)
        snapshot.devices.push_back(
            DeviceMetrics{device.get<0>(), std::move(device.get<1>())});
      return snapshot;
    });
  }

  Result<ProcessSnapshot> get_processes() {
    return with_connection<ProcessSnapshot>([&](sdbus::IConnection& connection) -> Result<ProcessSnapshot> {
      auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                      std::string(names::kManagerPath));
      using Process = sdbus::Struct<uint32_t, uint64_t, std::string, std::string>;
      ProcessSnapshot snapshot;
      std::vector<sdbus::Struct<uint32_t, std::vector<Process>>> devices;
      proxy->callMethod(std::string(names::member::kGetProcesses))
          .onInterface(std::string(names::kManagerInterface))
          .withTimeout(options_.call_timeout)
          .storeResultsTo(snapshot.timestamp_usec, devices);
      snapshot.devices.reserve(devices.size());
      for (auto& device : devices) {
        DeviceProcesses entry{device.get<0>(), {}};
        entry.processes.reserve(device.get<1>().size());
        for (auto& process : device.get<1>())
          entry.processes.push_back(CardProcess{process.get<0>(), process.get<1>(),
                                                std::move(process.get<2>()),
                                                std::move(process.get<3>())});
        snapshot.devices.push_back(std::move(entry));
      }
      return snapshot;
    });
  }

  Result<std::vector<DeviceInfo>> list_devices() {
    return with_connection<std::vector<DeviceInfo>>(
        [&](sdbus::IConnection& c) { return fetch_devices(c, options_.call_timeout); });
  }

  Result<ManagerInfo> manager_info() {
    return with_connection<ManagerInfo>(
        [&](sdbus::IConnection& c) { return fetch_manager(c, options_.call_timeout); });
  }

  void watch(Listener listener) {
    std::lock_guard lock(view_mutex_);
    if (watcher_.joinable()) return;
    wakeup_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wakeup_.valid()) throw std::runtime_error("eventfd failed");
    listener_ = std::move(listener);
    watcher_ = std::thread([this] { watch_loop(); });
  }

  DeviceView current_view() const {
    std::lock_guard lock(view_mutex_);
    return view_;
  }

 private:
  // Follows the bus and xpud: (re)connects, subscribes, and refreshes the whole view whenever a
  // signal says something changed. A full refresh (GetManagedObjects + GetAll) costs two calls and
  // cannot drift from xpud's state the way incremental updates could.
  void watch_loop() {
    auto backoff = std::chrono::milliseconds(250);
    bool first = true;
    while (!stop_) {
      try {
        auto connection = open_connection(options_);
        std::atomic<bool> dirty = true;
        const std::string bus_name(names::kBusName);
        auto owner_slot = connection->addMatch(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
            "member='NameOwnerChanged',arg0='" + bus_name + "'",
            [&](sdbus::Message&) { dirty = true; });
        auto xpud_slot = connection->addMatch("type='signal',sender='" + bus_name + "'",
                                              [&](sdbus::Message& message) {
                                                // PropertiesChanged of metrics never happens; any
                                                // signal from xpud means a state change.
                                                (void)message;
                                                dirty = true;
                                              });
        backoff = std::chrono::milliseconds(250);
        auto next_resync = std::chrono::steady_clock::now();
        while (!stop_) {
          while (connection->processPendingRequest()) {
          }
          auto now = std::chrono::steady_clock::now();
          if (dirty || first || now >= next_resync) {
            dirty = false;
            refresh(*connection, first);
            first = false;
            // A slow safety net in case a signal was ever missed.
            next_resync = now + std::chrono::seconds(30);
          }
          auto poll_data = connection->getEventLoopPollData();
          int timeout = poll_data.getPollTimeout();
          int until_resync = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  next_resync - now).count());
          timeout = timeout < 0 ? until_resync : std::min(timeout, until_resync);
          pollfd fds[2] = {{poll_data.fd, poll_data.events, 0}, {wakeup_.get(), POLLIN, 0}};
          if (::poll(fds, 2, std::max(timeout, 0)) < 0 && errno != EINTR) break;
          if (fds[0].revents & (POLLHUP | POLLERR)) throw sdbus::Error("org.freedesktop.DBus.Error.Disconnected", "bus connection closed");
        }
      } catch (const sdbus::Error& e) {
        spdlog::warn("D-Bus connection to {} lost or unavailable: {}; retrying in {} ms",
                     bus_description(options_), e.getMessage(), backoff.count());
        set_absent(first);
        first = false;
        wait_wakeup(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      }
    }
  }

  void refresh(sdbus::IConnection& connection, bool force_notify) {
    DeviceView fresh;
    try {
      auto manager = fetch_manager(connection, options_.call_timeout);
      auto devices = fetch_devices(connection, options_.call_timeout);
      if (manager && devices) {
        fresh.xpud_present = true;
        fresh.manager = std::move(*manager);
        fresh.devices = std::move(*devices);
      } else {
        spdlog::warn("xpud answered with malformed data: {}",
                     manager ? devices.error() : manager.error());
      }
    } catch (const sdbus::Error& e) {
      const std::string& name = e.getName();
      if (name != "org.freedesktop.DBus.Error.ServiceUnknown" &&
          name != "org.freedesktop.DBus.Error.NameHasNoOwner" &&
          name.rfind("org.freedesktop.DBus.Error.", 0) != 0)
        throw;  // the connection itself failed
      spdlog::debug("xpud not available: {}", describe(e, options_));
    }
    if (!fresh.xpud_present) {
      set_absent(force_notify);
      return;
    }
    publish(std::move(fresh), force_notify);
  }

  void set_absent(bool force_notify) {
    DeviceView absent;
    {
      std::lock_guard lock(view_mutex_);
      absent.devices = view_.devices;  // the last known cards, so consumers can mark them
    }
    publish(std::move(absent), force_notify);
  }

  void publish(DeviceView fresh, bool force_notify) {
    bool changed;
    {
      std::lock_guard lock(view_mutex_);
      changed = force_notify || fresh.xpud_present != view_.xpud_present ||
                fresh.devices != view_.devices ||
                fresh.manager.driver_version != view_.manager.driver_version ||
                fresh.manager.backend != view_.manager.backend;
      view_ = fresh;
    }
    if (changed && listener_) listener_(fresh);
  }

  void wait_wakeup(std::chrono::milliseconds timeout) {
    pollfd pfd{wakeup_.get(), POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  }

  ClientOptions options_;
  std::mutex call_mutex_;
  std::unique_ptr<sdbus::IConnection> call_connection_;

  mutable std::mutex view_mutex_;
  DeviceView view_;
  Listener listener_;
  UniqueFd wakeup_;
  std::atomic<bool> stop_ = false;
  std::thread watcher_;
};

XpudClient::XpudClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
XpudClient::~XpudClient() = default;

Result<ManagerInfo> XpudClient::manager_info() { return impl_->manager_info(); }
Result<std::vector<DeviceInfo>> XpudClient::list_devices() { return impl_->list_devices(); }
Result<MetricsSnapshot> XpudClient::get_metrics() { return impl_->get_metrics(); }
Result<ProcessSnapshot> XpudClient::get_processes() { return impl_->get_processes(); }
void XpudClient::watch(Listener listener) { impl_->watch(std::move(listener)); }
DeviceView XpudClient::current_view() const { return impl_->current_view(); }

}  // namespace xpu
