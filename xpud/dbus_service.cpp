#include "xpud/dbus_service.h"

#include <cmath>

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/names.h"
#include "xpud/backends/simulator.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/driver_requests.h"
#include "xpud/instance_registry.h"
#include "xpud/method_arguments.h"
#include "xpud/process_owner.h"
#include "xpud1/device_adaptor.h"
#include "xpud1/manager_adaptor.h"
#include "xpud1/simulator_adaptor.h"

namespace xpud {

namespace names = xpu::names;

namespace {

// The bus error a change's failure is answered with.
std::string error_name(DriverChangeError::Kind kind) {
  switch (kind) {
    case DriverChangeError::Kind::NoSuchDevice:
      return std::string(names::kErrorNoSuchDevice);
    case DriverChangeError::Kind::NotSupported:
      return std::string(names::kErrorNotSupported);
    case DriverChangeError::Kind::InvalidArgument:
      return std::string(names::kErrorInvalidArgument);
    case DriverChangeError::Kind::NoSuchInstance:
      return std::string(names::kErrorNoSuchInstance);
    case DriverChangeError::Kind::InUse:
      return std::string(names::kErrorInUse);
    case DriverChangeError::Kind::Failed:
      break;
  }
  return std::string(names::kErrorBackend);
}

// Defence in depth behind the bus policy: only root, or xpud's own user (a test's private bus,
// where xpud need not be root), may change state.
void authorize_root(uid_t caller, std::string_view method) {
  if (caller != 0 && caller != ::geteuid())
    throw sdbus::Error(std::string(names::bus::kErrorAccessDenied),
                       std::string(method) + " is for root or xpud's own user");
}

void throw_if(const std::optional<DriverChangeError>& refusal) {
  if (refusal) throw sdbus::Error(error_name(refusal->kind), refusal->message);
}

}  // namespace

class ManagerObject final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Manager_adaptor,
                                      sdbus::ObjectManager_adaptor, sdbus::Properties_adaptor> {
 public:
  ManagerObject(sdbus::IConnection& connection, DbusService& service)
      : AdaptorInterfaces(connection, std::string(names::kManagerPath)), service_(service) {
    registerAdaptor();
  }
  ~ManagerObject() { unregisterAdaptor(); }

 private:
  std::vector<sdbus::ObjectPath> ListDevices() override {
    std::vector<sdbus::ObjectPath> paths;
    for (const auto& [index, object] : service_.devices_)
      paths.emplace_back(names::device_path(index));
    return paths;
  }

  std::tuple<uint64_t, std::vector<sdbus::Struct<uint32_t, std::map<std::string, double>>>>
  GetMetrics() override {
    const auto& snapshot = service_.snapshot_;
    if (!snapshot) throw sdbus::Error(std::string(names::kErrorBackend), "no sample taken yet");
    std::vector<sdbus::Struct<uint32_t, std::map<std::string, double>>> devices;
    devices.reserve(snapshot->devices.size());
    for (const auto& device : snapshot->devices)
      devices.emplace_back(device.identity.index, device.metrics);
    return {snapshot->timestamp_usec, std::move(devices)};
  }

  // Owners are looked up per call, not per sample: the call is rare (once per scrape) and a
  // process's cgroup does not change while it lives.
  std::tuple<
      uint64_t,
      std::vector<sdbus::Struct<
          uint32_t, std::vector<sdbus::Struct<uint32_t, uint64_t, std::string, std::string>>>>>
  GetProcesses() override {
    const auto& snapshot = service_.snapshot_;
    if (!snapshot) throw sdbus::Error(std::string(names::kErrorBackend), "no sample taken yet");
    using Process = sdbus::Struct<uint32_t, uint64_t, std::string, std::string>;
    std::vector<sdbus::Struct<uint32_t, std::vector<Process>>> devices;
    for (const auto& device : snapshot->devices) {
      if (!device.processes) continue;
      std::vector<Process> processes;
      processes.reserve(device.processes->size());
      for (const auto& process : *device.processes) {
        ProcessOwner owner = read_process_owner(service_.facts_.proc_root, process.pid);
        processes.emplace_back(process.pid, process.memory_used_bytes, std::move(owner.pod_uid),
                               std::move(owner.container_id));
      }
      devices.emplace_back(device.identity.index, std::move(processes));
    }
    return {snapshot->timestamp_usec, std::move(devices)};
  }

  std::string Version() override { return XPU_VERSION; }
  std::string Backend() override { return service_.facts_.backend; }
  std::string LibraryPath() override { return service_.facts_.library_path; }
  std::string DriverVersion() override { return service_.facts_.driver_version; }
  uint32_t DeviceCount() override { return service_.device_count(); }
  uint32_t HealthyDeviceCount() override { return service_.healthy_device_count(); }
  bool DriverStalled() override { return service_.driver_stalled(); }
  bool ClusterReconfigureAllowed() override { return service_.facts_.cluster_reconfigure_allowed; }
  bool InstancesSupported() override { return service_.instances_.supported(); }
  std::vector<std::string> InstanceHook() override {
    if (!service_.instances_.supported()) return {};
    return service_.facts_.instance_hook;
  }
  bool ShareInstancesSupported() override { return service_.instances_.supported(); }

  // Root on the host may always. Anyone else reaches this only as far as the bus policy lets
  // them (on the system bus: the user xpud-api, i.e. xpud-api-proxy, which forwards it for the
  // cluster), and then only while the host's configuration allows the cluster to.
  void ConfigureVirtualFunctions(sdbus::Result<>&& result, uint32_t index, uint32_t count) override;

  // cXPU instances: root (or xpud's own user, on a private bus) only, whatever the bus policy
  // lets through; the cluster has no way to them (xpud-api-proxy does not forward them).
  void CreateInstance(sdbus::Result<>&& result, uint32_t index, std::string instance_id,
                      uint64_t memory_limit_bytes, std::string owner) override;
  void CreateShareInstance(sdbus::Result<>&& result, uint32_t index, std::string instance_id,
                           uint64_t memory_limit_bytes, std::string owner, std::string share,
                           sdbus::UnixFd container) override;
  void DestroyInstance(sdbus::Result<>&& result, uint32_t index, std::string instance_id) override;
  std::vector<sdbus::Struct<uint32_t, std::string, uint64_t, std::string>> ListInstances()
      override {
    std::vector<sdbus::Struct<uint32_t, std::string, uint64_t, std::string>> instances;
    for (auto& instance : service_.instances_.list())
      instances.emplace_back(instance.index, std::move(instance.id), instance.memory_limit_bytes,
                             std::move(instance.owner));
    return instances;
  }

  // The card at `index`, or the NoSuchDevice error for the caller.
  const DeviceIdentity& device_at(uint32_t index) const;
  uid_t caller_uid() const { return getObject().getCurrentlyProcessedMessage()->getCredsUid(); }
  // The reply of an asynchronous method that changes a card: success, or the change's error
  // (logged against the card). `what` names the method and its arguments in the log.
  static DriverRequests::Reply reply_to(sdbus::Result<>&& result, std::string what,
                                        const DeviceIdentity& device);

  DbusService& service_;
};

class DeviceObject final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Device_adaptor,
                                      sdbus::ManagedObject_adaptor, sdbus::Properties_adaptor> {
 public:
  DeviceObject(sdbus::IConnection& connection, const DeviceState& state)
      : AdaptorInterfaces(connection, names::device_path(state.identity.index)),
        identity_(state.identity),
        healthy_(state.healthy),
        reason_(state.health_reason),
        reason_kind_(state.health_reason_kind) {
    registerAdaptor();
    emitInterfacesAddedSignal({std::string(names::kDeviceInterface)});
  }
  ~DeviceObject() {
    try {
      emitInterfacesRemovedSignal({std::string(names::kDeviceInterface)});
    } catch (const sdbus::Error& e) {
      // The bus may be gone (this runs on shutdown after losing it); there is no one to tell.
      spdlog::debug("InterfacesRemoved for {} not sent: {}", names::device_name(identity_.index),
                    e.getMessage());
    }
    unregisterAdaptor();
  }

  const DeviceIdentity& identity() const { return identity_; }
  bool healthy() const { return healthy_; }

  // Returns true when the health changed (and the signals went out).
  bool set_health(const DeviceState& state) {
    if (state.healthy == healthy_ && state.health_reason == reason_) return false;
    std::vector<std::string> changed = {std::string(names::property::kHealthReason),
                                        std::string(names::property::kHealthReasonKind)};
    if (state.healthy != healthy_) {
      // Counted here, where the change becomes visible, so a client that restarts (the
      // exporter) still sees a flap that happened while it was away.
      ++(state.healthy ? to_healthy_ : to_unhealthy_);
      changed.insert(changed.end(), {std::string(names::property::kHealth),
                                     std::string(names::property::kHealthTransitions)});
    }
    healthy_ = state.healthy;
    reason_ = state.health_reason;
    reason_kind_ = state.health_reason_kind;
    emitPropertiesChangedSignal(std::string(names::kDeviceInterface), changed);
    return true;
  }

 private:
  uint32_t Index() override { return identity_.index; }
  std::string Name() override { return names::device_name(identity_.index); }
  std::string Uuid() override { return identity_.uuid; }
  std::string Serial() override { return identity_.serial; }
  std::string Model() override { return identity_.model; }
  std::string PciBusId() override { return identity_.pci_bus_id; }
  std::string PcieRoot() override { return identity_.pcie_root; }
  int32_t NumaNode() override { return identity_.numa_node; }
  uint64_t MemoryTotalBytes() override { return identity_.memory_total_bytes; }
  std::vector<std::string> DeviceNodes() override { return identity_.device_nodes; }
  std::vector<uint32_t> LinkedDevices() override {
    return {identity_.linked_devices.begin(), identity_.linked_devices.end()};
  }
  bool IsVirtualFunction() override { return identity_.is_virtual_function; }
  bool SriovEnabled() override { return identity_.sriov_enabled; }
  std::string PhysicalFunction() override { return identity_.physical_function; }
  std::string Health() override {
    return std::string(healthy_ ? names::kHealthy : names::kUnhealthy);
  }
  std::string HealthReason() override { return reason_; }
  std::string HealthReasonKind() override { return reason_kind_; }
  std::map<std::string, uint64_t> HealthTransitions() override {
    return {{std::string(names::kHealthy), to_healthy_},
            {std::string(names::kUnhealthy), to_unhealthy_}};
  }

  DeviceIdentity identity_;
  bool healthy_;
  std::string reason_;
  std::string reason_kind_;
  uint64_t to_healthy_ = 0;
  uint64_t to_unhealthy_ = 0;
};

class SimulatorObject final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Simulator_adaptor> {
 public:
  SimulatorObject(sdbus::IConnection& connection, Simulator& simulator,
                  std::function<void()> on_injection)
      : AdaptorInterfaces(connection, std::string(names::kManagerPath)),
        simulator_(simulator),
        on_injection_(std::move(on_injection)) {
    registerAdaptor();
  }
  ~SimulatorObject() { unregisterAdaptor(); }

 private:
  void SetHealth(const uint32_t& index, const std::string& health,
                 const std::string& reason) override {
    authorize();
    if (auto refusal = check_set_health_arguments(health, reason))
      throw sdbus::Error(std::string(refusal->error_name), refusal->message);
    check(simulator_.set_health(index, health == names::kHealthy, reason));
    spdlog::info("simulator: {} set {} ({})", names::device_name(index), health, reason);
    on_injection_();
  }

  void SetMetric(const uint32_t& index, const std::string& key, const double& value) override {
    authorize();
    check(simulator_.set_metric(index, key, value));
    spdlog::info("simulator: {} {} = {}", names::device_name(index), key, value);
    on_injection_();
  }

  void authorize() {
    authorize_root(getObject().getCurrentlyProcessedMessage()->getCredsUid(), "Simulator methods");
  }

  static void check(const std::optional<InjectionError>& error) {
    if (!error) return;
    const auto name = error->kind == InjectionError::Kind::NoSuchDevice
                          ? names::kErrorNoSuchDevice
                          : names::kErrorInvalidArgument;
    throw sdbus::Error(std::string(name), error->message);
  }

  Simulator& simulator_;
  std::function<void()> on_injection_;
};

const DeviceIdentity& ManagerObject::device_at(uint32_t index) const {
  auto device = service_.devices_.find(index);
  if (device == service_.devices_.end())
    throw sdbus::Error(std::string(names::kErrorNoSuchDevice),
                       "no device " + names::device_name(index));
  return device->second->identity();
}

DriverRequests::Reply ManagerObject::reply_to(sdbus::Result<>&& result, std::string what,
                                              const DeviceIdentity& device) {
  auto reply = std::make_shared<sdbus::Result<>>(std::move(result));
  return [reply, what = std::move(what), name = names::device_name(device.index),
          uuid = device.uuid](const std::optional<DriverChangeError>& error) {
    try {
      if (!error) {
        reply->returnResults();
        return;
      }
      xpu::log_device_event(spdlog::level::warn, name, uuid, what + " failed: " + error->message);
      reply->returnError(sdbus::Error(error_name(error->kind), error->message));
    } catch (const sdbus::Error& e) {
      // The caller may be gone by now; the change itself is done (or not) either way.
      spdlog::warn("{} for {}: reply not sent: {}", what, name, e.getMessage());
    }
  };
}

void ManagerObject::ConfigureVirtualFunctions(sdbus::Result<>&& result, uint32_t index,
                                              uint32_t count) {
  const uid_t caller = caller_uid();
  if (caller != 0 && !service_.facts_.cluster_reconfigure_allowed)
    throw sdbus::Error(std::string(names::bus::kErrorAccessDenied),
                       "ConfigureVirtualFunctions is for root; other callers (the cluster, "
                       "through xpud-api-proxy) need [sriov] allow_cluster_reconfigure = true in "
                       "xpud's configuration");
  const DeviceIdentity& identity = device_at(index);
  const std::string name = names::device_name(index);
  if (service_.driver_requests_.backend().virtual_functions() == nullptr)
    throw sdbus::Error(
        std::string(names::kErrorNotSupported),
        "the " + service_.facts_.backend + " backend cannot configure SR-IOV virtual functions");
  if (identity.is_virtual_function)
    throw sdbus::Error(std::string(names::kErrorNotSupported),
                       name + " is a virtual function; configure its physical function");
  xpu::log_device_event(spdlog::level::info, name, identity.uuid,
                        "ConfigureVirtualFunctions: " + std::to_string(count) +
                            " virtual functions asked by uid " + std::to_string(caller));
  service_.driver_requests_.start(
      "set virtual functions of " + name,
      [identity, count](xpud::Backend& backend) {  // Backend() is a property here
        return backend.virtual_functions()->set_virtual_function_count(identity, count);
      },
      reply_to(std::move(result), "ConfigureVirtualFunctions", identity));
}

void ManagerObject::CreateInstance(sdbus::Result<>&& result, uint32_t index,
                                   std::string instance_id, uint64_t memory_limit_bytes,
                                   std::string owner) {
  const uid_t caller = caller_uid();
  authorize_root(caller, names::member::kCreateInstance);
  const DeviceIdentity& identity = device_at(index);
  // The owner is checked before it reaches the log.
  if (auto refusal = check_instance_owner(owner))
    throw sdbus::Error(std::string(refusal->error_name), refusal->message);
  const std::string what =
      "CreateInstance " + instance_id + " (" + std::to_string(memory_limit_bytes) + " bytes" +
      (owner.empty() ? "" : ", for " + owner) + ") by uid " + std::to_string(caller);
  throw_if(service_.instances_.create(identity, instance_id, memory_limit_bytes, owner,
                                      std::nullopt, reply_to(std::move(result), what, identity)));
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

void ManagerObject::CreateShareInstance(sdbus::Result<>&& result, uint32_t index,
                                        std::string instance_id, uint64_t memory_limit_bytes,
                                        std::string owner, std::string share,
                                        sdbus::UnixFd container) {
  const uid_t caller = caller_uid();
  authorize_root(caller, names::member::kCreateShareInstance);
  const DeviceIdentity& identity = device_at(index);
  // The owner and the share are checked before they reach the log.
  for (const auto& refusal : {check_instance_owner(owner), check_instance_share(share)})
    if (refusal) throw sdbus::Error(std::string(refusal->error_name), refusal->message);
  const std::string what = "CreateShareInstance " + instance_id + " (" +
                           std::to_string(memory_limit_bytes) + " bytes of share " + share +
                           (owner.empty() ? "" : ", for " + owner) + ") by uid " +
                           std::to_string(caller);
  InstanceShare bounded{std::move(share), std::make_shared<const ContainerProcess>(
                                              xpu::UniqueFd(container.release()))};
  auto refusal =
      service_.instances_.create(identity, instance_id, memory_limit_bytes, owner,
                                 std::move(bounded), reply_to(std::move(result), what, identity));
  // A share refused is what an operator looks for when a pod's container does not start.
  if (refusal)
    xpu::log_device_event(spdlog::level::warn, names::device_name(index), identity.uuid,
                          what + " refused: " + refusal->message);
  throw_if(refusal);
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

void ManagerObject::DestroyInstance(sdbus::Result<>&& result, uint32_t index,
                                    std::string instance_id) {
  const uid_t caller = caller_uid();
  authorize_root(caller, names::member::kDestroyInstance);
  const DeviceIdentity& identity = device_at(index);
  const std::string what = "DestroyInstance " + instance_id + " by uid " + std::to_string(caller);
  throw_if(service_.instances_.destroy(identity, instance_id,
                                       reply_to(std::move(result), what, identity)));
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

DbusService::DbusService(sdbus::IConnection& connection, ManagerFacts facts, Simulator* simulator,
                         std::function<void()> on_injection, DriverRequests& driver_requests,
                         InstanceRegistry& instances)
    : connection_(connection),
      facts_(std::move(facts)),
      driver_requests_(driver_requests),
      instances_(instances) {
  manager_ = std::make_unique<ManagerObject>(connection_, *this);
  if (simulator != nullptr)
    simulator_ =
        std::make_unique<SimulatorObject>(connection_, *simulator, std::move(on_injection));
}

DbusService::~DbusService() {
  devices_.clear();
  simulator_.reset();
  manager_.reset();
}

void DbusService::set_cluster_reconfigure_allowed(bool allowed) {
  if (facts_.cluster_reconfigure_allowed == allowed) return;
  facts_.cluster_reconfigure_allowed = allowed;
  spdlog::info("[sriov] allow_cluster_reconfigure is now {}", allowed);
  manager_->emitPropertiesChangedSignal(std::string(names::kManagerInterface),
                                        {std::string(names::property::kClusterReconfigureAllowed)});
}

unsigned DbusService::device_count() const {
  return static_cast<unsigned>(devices_.size());
}

unsigned DbusService::healthy_device_count() const {
  unsigned healthy = 0;
  for (const auto& [index, device] : devices_) healthy += device->healthy() ? 1 : 0;
  return healthy;
}

unsigned DbusService::sriov_enabled_count() const {
  unsigned count = 0;
  for (const auto& [index, device] : devices_) count += device->identity().sriov_enabled ? 1 : 0;
  return count;
}

void DbusService::publish(std::shared_ptr<const Snapshot> snapshot) {
  const unsigned old_count = device_count();
  const unsigned old_healthy = healthy_device_count();
  const bool old_stalled = driver_stalled();
  snapshot_ = std::move(snapshot);

  std::map<unsigned, const DeviceState*> present;
  for (const auto& device : snapshot_->devices) present[device.identity.index] = &device;

  // Vanished, or a different card at the same index (hot swap): remove the old object first.
  for (auto it = devices_.begin(); it != devices_.end();) {
    auto now = present.find(it->first);
    if (now == present.end() || now->second->identity != it->second->identity()) {
      const auto& identity = it->second->identity();
      xpu::log_device_event(spdlog::level::warn, names::device_name(identity.index), identity.uuid,
                            "device removed");
      instances_.forget_card(identity.index);
      it = devices_.erase(it);
    } else {
      ++it;
    }
  }

  for (const auto& [index, state] : present) {
    const std::string name = names::device_name(index);
    auto it = devices_.find(index);
    if (it == devices_.end()) {
      devices_.emplace(index, std::make_unique<DeviceObject>(connection_, *state));
      xpu::log_device_event(
          spdlog::level::info, name, state->identity.uuid,
          "device added: " + state->identity.model + " at " + state->identity.pci_bus_id + ", " +
              (state->healthy ? "Healthy" : "Unhealthy: " + state->health_reason));
      if (!state->healthy)
        manager_->emitDeviceHealthChanged(names::device_path(index), std::string(names::kUnhealthy),
                                          state->health_reason);
      continue;
    }
    if (!it->second->set_health(*state)) continue;
    const std::string health(state->healthy ? names::kHealthy : names::kUnhealthy);
    manager_->emitDeviceHealthChanged(names::device_path(index), health, state->health_reason);
    if (state->healthy) {
      xpu::log_device_event(spdlog::level::info, name, state->identity.uuid,
                            "health: Healthy again");
    } else {
      xpu::log_device_event(spdlog::level::warn, name, state->identity.uuid,
                            "health: Unhealthy: " + state->health_reason);
    }
  }

  std::vector<std::string> changed;
  if (snapshot_->driver_version != facts_.driver_version) {
    facts_.driver_version = snapshot_->driver_version;
    changed.emplace_back(names::property::kDriverVersion);
  }
  if (device_count() != old_count) changed.emplace_back(names::property::kDeviceCount);
  if (healthy_device_count() != old_healthy)
    changed.emplace_back(names::property::kHealthyDeviceCount);
  if (driver_stalled() != old_stalled) changed.emplace_back(names::property::kDriverStalled);
  // backend=auto moving from sysfs to xpuml (auto_backend.h).
  if (!snapshot_->backend.empty() && snapshot_->backend != facts_.backend) {
    spdlog::info("backend is now {} (was {})", snapshot_->backend, facts_.backend);
    facts_.backend = snapshot_->backend;
    changed.emplace_back(names::property::kBackend);
    changed.emplace_back(names::property::kInstancesSupported);
    changed.emplace_back(names::property::kInstanceHook);
    changed.emplace_back(names::property::kShareInstancesSupported);
  }
  if (!snapshot_->backend.empty() && snapshot_->library_path != facts_.library_path) {
    spdlog::info("libxpuml in use: {}",
                 snapshot_->library_path.empty() ? "none" : snapshot_->library_path);
    facts_.library_path = snapshot_->library_path;
    changed.emplace_back(names::property::kLibraryPath);
  }
  if (!changed.empty())
    manager_->emitPropertiesChangedSignal(std::string(names::kManagerInterface), changed);
}

}  // namespace xpud
