#include "xpud/instance_registry.h"

#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/method_arguments.h"

namespace xpud {
namespace {

using Kind = DriverChangeError::Kind;

std::string describe(const DeviceIdentity& device, const std::string& id) {
  return "cXPU instance " + id + " on " + xpu::names::device_name(device.index);
}

}  // namespace

bool InstanceRegistry::supported() const {
  return requests_.backend().cxpu_instances() != nullptr;
}

std::optional<DriverChangeError> InstanceRegistry::refuse(const DeviceIdentity& device,
                                                          const std::string& id) const {
  if (!supported())
    return DriverChangeError{Kind::NotSupported,
                             "the " + std::string(requests_.backend().name()) +
                                 " backend cannot make cXPU instances (xpuml needs a libxpuml "
                                 "that exports xpumlDeviceCreateCxpuInstance)"};
  if (auto refusal = check_instance_id(id))
    return DriverChangeError{Kind::InvalidArgument, refusal->message};
  if (changing_.count(Key{device.index, id}) != 0)
    return DriverChangeError{Kind::Failed, describe(device, id) + " is being changed already"};
  return std::nullopt;
}

std::optional<DriverChangeError> InstanceRegistry::create(const DeviceIdentity& device,
                                                          const std::string& id,
                                                          std::uint64_t memory_limit_bytes,
                                                          std::string owner, Reply reply) {
  if (auto refusal = refuse(device, id)) return refusal;
  if (device.sriov_enabled)
    return DriverChangeError{Kind::NotSupported,
                             xpu::names::device_name(device.index) +
                                 " has its SR-IOV virtual functions on; make the instance on one "
                                 "of them"};
  if (auto refusal = check_instance_memory_limit(memory_limit_bytes, device.memory_total_bytes))
    return DriverChangeError{Kind::InvalidArgument, refusal->message};
  if (auto refusal = check_instance_owner(owner))
    return DriverChangeError{Kind::InvalidArgument, refusal->message};

  const Key key{device.index, id};
  auto made = made_.find(key);
  const bool exists = made != made_.end() && made->second.uuid == device.uuid;
  if (exists && made->second.memory_limit_bytes == memory_limit_bytes) {
    made->second.owner = std::move(owner);
    reply(std::nullopt);
    return std::nullopt;
  }
  changing_.insert(key);
  auto job = [device, id, memory_limit_bytes, exists](Backend& backend) {
    CxpuInstanceControl* control = backend.cxpu_instances();
    if (control == nullptr)
      return std::optional<DriverChangeError>(
          DriverChangeError{Kind::NotSupported, "the backend has no cXPU instances now"});
    return exists ? control->set_instance_memory_limit(device, id, memory_limit_bytes)
                  : control->create_instance(device, id, memory_limit_bytes);
  };
  auto done = [this, key, uuid = device.uuid, memory_limit_bytes, owner = std::move(owner),
               reply = std::move(reply)](const std::optional<DriverChangeError>& error) {
    changing_.erase(key);
    if (!error) made_[key] = Record{uuid, memory_limit_bytes, owner};
    reply(error);
  };
  requests_.start((exists ? "set the memory limit of " : "create ") + describe(device, id),
                  std::move(job), std::move(done));
  return std::nullopt;
}

std::optional<DriverChangeError> InstanceRegistry::destroy(const DeviceIdentity& device,
                                                           const std::string& id, Reply reply) {
  if (auto refusal = refuse(device, id)) return refusal;
  const Key key{device.index, id};
  changing_.insert(key);
  auto job = [device, id](Backend& backend) {
    CxpuInstanceControl* control = backend.cxpu_instances();
    if (control == nullptr)
      return std::optional<DriverChangeError>(
          DriverChangeError{Kind::NotSupported, "the backend has no cXPU instances now"});
    return control->destroy_instance(device, id);
  };
  auto done = [this, key, uuid = device.uuid,
               reply = std::move(reply)](const std::optional<DriverChangeError>& error) {
    changing_.erase(key);
    auto made = made_.find(key);
    const bool ours = made != made_.end() && made->second.uuid == uuid;
    // The library no longer has one xpud made (the card was reset, say): what the caller wants
    // is the case, and the record goes.
    const bool gone = !error || (error->kind == Kind::NoSuchInstance && ours);
    if (gone && made != made_.end()) made_.erase(made);
    reply(gone ? std::nullopt : error);
  };
  requests_.start("destroy " + describe(device, id), std::move(job), std::move(done));
  return std::nullopt;
}

std::vector<CxpuInstance> InstanceRegistry::list() const {
  std::vector<CxpuInstance> instances;
  instances.reserve(made_.size());
  for (const auto& [key, record] : made_)
    instances.push_back(
        CxpuInstance{key.first, key.second, record.memory_limit_bytes, record.owner});
  return instances;
}

void InstanceRegistry::forget_card(unsigned index) {
  for (auto it = made_.lower_bound(Key{index, ""});
       it != made_.end() && it->first.first == index;) {
    spdlog::info("cXPU instance {} on {} forgotten: the card is gone", it->first.second,
                 xpu::names::device_name(index));
    it = made_.erase(it);
  }
}

}  // namespace xpud
