#include "xpud/bus/manager_object.h"

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/names.h"
#include "xpud/backends/virtual_functions.h"
#include "xpud/bus/bus_errors.h"
#include "xpud/recovery/card_recovery.h"
#include "xpud/requests/driver_requests.h"
#include "xpud/requests/instance_registry.h"
#include "xpud/requests/method_arguments.h"
#include "xpud/sampling/process_owner.h"
#include "xpud1/manager_adaptor.h"

namespace xpud {

namespace names = xpu::names;

class ManagerObject::Adaptor final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Manager_adaptor,
                                      sdbus::ObjectManager_adaptor, sdbus::Properties_adaptor> {
 public:
  Adaptor(sdbus::IConnection& connection, const DeviceTable& table, ManagerFacts facts,
          DriverRequests& driver_requests, InstanceRegistry& instances, CardRecovery& recovery)
      : AdaptorInterfaces(connection, std::string(names::kManagerPath)),
        table_(table),
        facts_(std::move(facts)),
        driver_requests_(driver_requests),
        instances_(instances),
        recovery_(recovery) {
    registerAdaptor();
  }
  ~Adaptor() { unregisterAdaptor(); }
  Adaptor(const Adaptor&) = delete;
  Adaptor& operator=(const Adaptor&) = delete;

  ManagerFacts& facts() { return facts_; }
  const DeviceTable& table() const { return table_; }

 private:
  std::vector<sdbus::ObjectPath> ListDevices() override {
    std::vector<sdbus::ObjectPath> paths;
    for (const auto& [index, device] : table_.devices())
      paths.emplace_back(names::device_path(index));
    return paths;
  }

  std::tuple<uint64_t, std::vector<sdbus::Struct<uint32_t, std::map<std::string, double>>>>
  GetMetrics() override {
    const auto& snapshot = table_.snapshot();
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
    const auto& snapshot = table_.snapshot();
    if (!snapshot) throw sdbus::Error(std::string(names::kErrorBackend), "no sample taken yet");
    using Process = sdbus::Struct<uint32_t, uint64_t, std::string, std::string>;
    std::vector<sdbus::Struct<uint32_t, std::vector<Process>>> devices;
    for (const auto& device : snapshot->devices) {
      if (!device.processes) continue;
      std::vector<Process> processes;
      processes.reserve(device.processes->size());
      for (const auto& process : *device.processes) {
        ProcessOwner owner = read_process_owner(facts_.proc_root, process.pid);
        processes.emplace_back(process.pid, process.memory_used_bytes, std::move(owner.pod_uid),
                               std::move(owner.container_id));
      }
      devices.emplace_back(device.identity.index, std::move(processes));
    }
    return {snapshot->timestamp_usec, std::move(devices)};
  }

  std::string Version() override { return XPU_VERSION; }
  std::string Backend() override { return table_.manager().backend; }
  std::string LibraryPath() override { return table_.manager().library_path; }
  std::string DriverVersion() override { return table_.manager().driver_version; }
  uint32_t DeviceCount() override { return table_.device_count(); }
  uint32_t HealthyDeviceCount() override { return table_.healthy_device_count(); }
  bool DriverStalled() override { return table_.driver_stalled(); }
  bool ClusterReconfigureAllowed() override { return facts_.cluster_reconfigure_allowed; }
  bool InstancesSupported() override { return instances_.supported(); }
  std::vector<std::string> InstanceHook() override {
    if (!instances_.supported()) return {};
    return facts_.instance_hook;
  }
  bool ShareInstancesSupported() override { return instances_.supported(); }

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
    for (auto& instance : instances_.list())
      instances.emplace_back(instance.index, std::move(instance.id), instance.memory_limit_bytes,
                             std::move(instance.owner));
    return instances;
  }

  // Root only, whatever the bus policy lets through; never through xpud-api-proxy (its filter
  // forwards no method that changes a card but ConfigureVirtualFunctions).
  void ResetDevice(sdbus::Result<>&& result, uint32_t index) override;

  // The card at `index`, or the NoSuchDevice error for the caller.
  const DeviceIdentity& device_at(uint32_t index) const;
  uid_t caller_uid() const { return getObject().getCurrentlyProcessedMessage()->getCredsUid(); }
  // The reply of an asynchronous method that changes a card: success, or the change's error
  // (logged against the card). `what` names the method and its arguments in the log.
  static DriverRequests::Reply reply_to(sdbus::Result<>&& result, std::string what,
                                        const DeviceIdentity& device);

  const DeviceTable& table_;
  ManagerFacts facts_;
  DriverRequests& driver_requests_;
  InstanceRegistry& instances_;
  CardRecovery& recovery_;
};

const DeviceIdentity& ManagerObject::Adaptor::device_at(uint32_t index) const {
  const PublishedDevice* device = table_.find(index);
  if (device == nullptr)
    throw sdbus::Error(std::string(names::kErrorNoSuchDevice),
                       "no device " + names::device_name(index));
  return device->identity;
}

DriverRequests::Reply ManagerObject::Adaptor::reply_to(sdbus::Result<>&& result, std::string what,
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

void ManagerObject::Adaptor::ConfigureVirtualFunctions(sdbus::Result<>&& result, uint32_t index,
                                                       uint32_t count) {
  const uid_t caller = caller_uid();
  if (caller != 0 && !facts_.cluster_reconfigure_allowed)
    throw sdbus::Error(std::string(names::bus::kErrorAccessDenied),
                       "ConfigureVirtualFunctions is for root; other callers (the cluster, "
                       "through xpud-api-proxy) need [sriov] allow_cluster_reconfigure = true in "
                       "xpud's configuration");
  const DeviceIdentity& identity = device_at(index);
  const std::string name = names::device_name(index);
  if (driver_requests_.backend().virtual_functions() == nullptr)
    throw sdbus::Error(
        std::string(names::kErrorNotSupported),
        "the " + table_.manager().backend + " backend cannot configure SR-IOV virtual functions");
  if (identity.is_virtual_function)
    throw sdbus::Error(std::string(names::kErrorNotSupported),
                       name + " is a virtual function; configure its physical function");
  xpu::log_device_event(spdlog::level::info, name, identity.uuid,
                        "ConfigureVirtualFunctions: " + std::to_string(count) +
                            " virtual functions asked by uid " + std::to_string(caller));
  driver_requests_.start(
      "set virtual functions of " + name,
      [identity, count](xpud::Backend& backend) {  // Backend() is a property here
        return backend.virtual_functions()->set_virtual_function_count(identity, count);
      },
      reply_to(std::move(result), "ConfigureVirtualFunctions", identity));
}

void ManagerObject::Adaptor::CreateInstance(sdbus::Result<>&& result, uint32_t index,
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
  throw_if(instances_.create(identity, instance_id, memory_limit_bytes, owner, std::nullopt,
                             reply_to(std::move(result), what, identity)));
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

void ManagerObject::Adaptor::CreateShareInstance(sdbus::Result<>&& result, uint32_t index,
                                                 std::string instance_id,
                                                 uint64_t memory_limit_bytes, std::string owner,
                                                 std::string share, sdbus::UnixFd container) {
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
  auto refusal = instances_.create(identity, instance_id, memory_limit_bytes, owner,
                                   std::move(bounded), reply_to(std::move(result), what, identity));
  // A share refused is what an operator looks for when a pod's container does not start.
  if (refusal)
    xpu::log_device_event(spdlog::level::warn, names::device_name(index), identity.uuid,
                          what + " refused: " + refusal->message);
  throw_if(refusal);
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

void ManagerObject::Adaptor::DestroyInstance(sdbus::Result<>&& result, uint32_t index,
                                             std::string instance_id) {
  const uid_t caller = caller_uid();
  authorize_root(caller, names::member::kDestroyInstance);
  const DeviceIdentity& identity = device_at(index);
  const std::string what = "DestroyInstance " + instance_id + " by uid " + std::to_string(caller);
  throw_if(instances_.destroy(identity, instance_id, reply_to(std::move(result), what, identity)));
  xpu::log_device_event(spdlog::level::info, names::device_name(index), identity.uuid, what);
}

void ManagerObject::Adaptor::ResetDevice(sdbus::Result<>&& result, uint32_t index) {
  const uid_t caller = caller_uid();
  authorize_root(caller, names::member::kResetDevice);
  // The outcome is in the journal already (CardRecovery); the reply only carries it.
  auto reply = std::make_shared<sdbus::Result<>>(std::move(result));
  auto refusal = recovery_.request(
      index, "uid " + std::to_string(caller),
      [reply, index](const std::optional<DriverChangeError>& error) {
        try {
          if (error)
            reply->returnError(sdbus::Error(error_name(error->kind), error->message));
          else
            reply->returnResults();
        } catch (const sdbus::Error& e) {
          spdlog::warn("ResetDevice for {}: reply not sent: {}", names::device_name(index),
                       e.getMessage());
        }
      });
  if (refusal) throw sdbus::Error(refusal->error_name, refusal->message);
}

ManagerObject::ManagerObject(sdbus::IConnection& connection, const DeviceTable& table,
                             ManagerFacts facts, DriverRequests& driver_requests,
                             InstanceRegistry& instances, CardRecovery& recovery)
    : adaptor_(std::make_unique<Adaptor>(connection, table, std::move(facts), driver_requests,
                                         instances, recovery)) {}

ManagerObject::~ManagerObject() = default;

void ManagerObject::set_cluster_reconfigure_allowed(bool allowed) {
  bool& current = adaptor_->facts().cluster_reconfigure_allowed;
  if (current == allowed) return;
  current = allowed;
  spdlog::info("[sriov] allow_cluster_reconfigure is now {}", allowed);
  properties_changed({std::string(names::property::kClusterReconfigureAllowed)});
}

void ManagerObject::device_health_changed(unsigned index) {
  const PublishedDevice* device = adaptor_->table().find(index);
  if (device == nullptr) return;
  adaptor_->emitDeviceHealthChanged(
      names::device_path(index), std::string(device->healthy ? names::kHealthy : names::kUnhealthy),
      device->health_reason);
}

void ManagerObject::properties_changed(const std::vector<std::string>& properties) {
  adaptor_->emitPropertiesChangedSignal(std::string(names::kManagerInterface), properties);
}

}  // namespace xpud
