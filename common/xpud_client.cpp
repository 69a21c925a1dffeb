#include "common/xpud_client.h"

#include <mutex>

#include <sdbus-c++/sdbus-c++.h>

#include "common/names.h"
#include "common/xpud_connection.h"
#include "common/xpud_properties.h"
#include "common/xpud_watcher.h"

namespace xpu {

// One-shot calls here; parsing in xpud_properties, connections and errors in xpud_connection,
// the watcher thread in xpud_watcher.
class XpudClient::Impl {
 public:
  explicit Impl(ClientOptions options) : watcher(options), options_(std::move(options)) {}

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
      if (!is_answer(e)) call_connection_.reset();
      return Error{describe_call_failure(e, options_)};
    }
  }

  Result<MetricsSnapshot> get_metrics() {
    return with_connection<MetricsSnapshot>(
        [&](sdbus::IConnection& connection) -> Result<MetricsSnapshot> {
          auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                          std::string(names::kManagerPath));
          MetricsSnapshot snapshot;
          std::vector<sdbus::Struct<uint32_t, std::map<std::string, double>>> devices;
          proxy->callMethod(std::string(names::member::kGetMetrics))
              .onInterface(std::string(names::kManagerInterface))
              .withTimeout(options_.call_timeout)
              .storeResultsTo(snapshot.timestamp_usec, devices);
          snapshot.devices.reserve(devices.size());
          for (auto& device : devices)
            snapshot.devices.push_back(DeviceMetrics{device.get<0>(), std::move(device.get<1>())});
          return snapshot;
        });
  }

  Result<ProcessSnapshot> get_processes() {
    return with_connection<ProcessSnapshot>(
        [&](sdbus::IConnection& connection) -> Result<ProcessSnapshot> {
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

  // A Manager method that changes something and returns nothing; xpud answers once it is done.
  template <typename... Args>
  Status change(std::string_view member, std::chrono::milliseconds timeout, const Args&... args) {
    return with_connection<Ok>([&](sdbus::IConnection& connection) -> Status {
      auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                      std::string(names::kManagerPath));
      try {
        proxy->callMethod(std::string(member))
            .onInterface(std::string(names::kManagerInterface))
            .withTimeout(timeout)
            .withArguments(args...);
      } catch (const sdbus::Error& e) {
        // xpud and the API proxy refuse with AccessDenied of their own, which says why; the
        // generic wording would blame the bus policy.
        if (e.getName() != names::bus::kErrorAccessDenied) throw;
        return Error{e.getMessage() + " (" + e.getName() + ")"};
      }
      return ok_status();
    });
  }

  Result<std::vector<CxpuInstanceInfo>> list_instances() {
    return with_connection<std::vector<CxpuInstanceInfo>>(
        [&](sdbus::IConnection& connection) -> Result<std::vector<CxpuInstanceInfo>> {
          auto proxy = sdbus::createProxy(connection, std::string(names::kBusName),
                                          std::string(names::kManagerPath));
          std::vector<sdbus::Struct<uint32_t, std::string, uint64_t, std::string>> listed;
          proxy->callMethod(std::string(names::member::kListInstances))
              .onInterface(std::string(names::kManagerInterface))
              .withTimeout(options_.call_timeout)
              .storeResultsTo(listed);
          std::vector<CxpuInstanceInfo> instances;
          instances.reserve(listed.size());
          for (auto& instance : listed)
            instances.push_back(CxpuInstanceInfo{instance.get<0>(), std::move(instance.get<1>()),
                                                 instance.get<2>(), std::move(instance.get<3>())});
          return instances;
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

  XpudWatcher watcher;

 private:
  const ClientOptions options_;
  std::mutex call_mutex_;
  std::unique_ptr<sdbus::IConnection> call_connection_;
};

XpudClient::XpudClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
XpudClient::~XpudClient() = default;

Result<ManagerInfo> XpudClient::manager_info() {
  return impl_->manager_info();
}
Result<std::vector<DeviceInfo>> XpudClient::list_devices() {
  return impl_->list_devices();
}
Result<MetricsSnapshot> XpudClient::get_metrics() {
  return impl_->get_metrics();
}
Result<ProcessSnapshot> XpudClient::get_processes() {
  return impl_->get_processes();
}
Status XpudClient::configure_virtual_functions(unsigned index, unsigned count,
                                               std::chrono::milliseconds timeout) {
  return impl_->change(names::member::kConfigureVirtualFunctions, timeout,
                       static_cast<uint32_t>(index), static_cast<uint32_t>(count));
}
Status XpudClient::create_instance(unsigned index, const std::string& id,
                                   std::uint64_t memory_limit_bytes, const std::string& owner,
                                   std::chrono::milliseconds timeout) {
  return impl_->change(names::member::kCreateInstance, timeout, static_cast<uint32_t>(index), id,
                       static_cast<uint64_t>(memory_limit_bytes), owner);
}
Status XpudClient::create_share_instance(unsigned index, const std::string& id,
                                         std::uint64_t memory_limit_bytes, const std::string& owner,
                                         const std::string& share, int container_pidfd,
                                         std::chrono::milliseconds timeout) {
  return impl_->change(names::member::kCreateShareInstance, timeout, static_cast<uint32_t>(index),
                       id, static_cast<uint64_t>(memory_limit_bytes), owner, share,
                       sdbus::UnixFd(container_pidfd));
}
Status XpudClient::destroy_instance(unsigned index, const std::string& id,
                                    std::chrono::milliseconds timeout) {
  return impl_->change(names::member::kDestroyInstance, timeout, static_cast<uint32_t>(index), id);
}
Status XpudClient::reset_device(unsigned index, std::chrono::milliseconds timeout) {
  return impl_->change(names::member::kResetDevice, timeout, static_cast<uint32_t>(index));
}
Result<std::vector<CxpuInstanceInfo>> XpudClient::list_instances() {
  return impl_->list_instances();
}
void XpudClient::watch(Listener listener) {
  impl_->watcher.start(std::move(listener));
}
DeviceView XpudClient::current_view() const {
  return impl_->watcher.current_view();
}

}  // namespace xpu
