#include "xpud/requests/instance_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/names.h"
#include "xpud/backends/cxpu_instances.h"
#include "xpud/requests/method_arguments.h"

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

InstanceRegistry::CardHolding InstanceRegistry::holding(const DeviceIdentity& device,
                                                        const Key& key,
                                                        const std::string& share) const {
  CardHolding held;
  auto on_card = [&](const Key& other, const Record& record) {
    return other.first == device.index && record.uuid == device.uuid && other != key;
  };
  std::map<std::string, std::uint64_t> bytes_of;  // instance id -> the most it may hold
  for (const auto& [other, record] : made_) {
    if (!on_card(other, record)) continue;
    if (record.container && record.container->exited()) {
      // Its container is gone, and its poststop hook never destroyed it (the runtime or the
      // node's runtime namespace died first): it holds nothing a container uses. One that a
      // call is destroying already is left to that call.
      if (!changing_.contains(other)) held.exited_containers.push_back(other.second);
      continue;
    }
    bytes_of[other.second] = record.memory_limit_bytes;
    if (!share.empty() && record.share == share) held.share_holder = other;
  }
  for (const auto& [other, pending] : changing_) {
    if (!on_card(other, pending)) continue;
    auto& bytes = bytes_of[other.second];
    bytes = std::max(bytes, pending.memory_limit_bytes);
    if (!share.empty() && pending.share == share) held.share_holder = other;
  }
  constexpr std::uint64_t kMost = ~std::uint64_t{0};
  for (const auto& [id, bytes] : bytes_of)
    held.bytes = bytes > kMost - held.bytes ? kMost : held.bytes + bytes;
  return held;
}

std::optional<DriverChangeError> InstanceRegistry::check_bounds(
    const DeviceIdentity& device, const Key& key, std::uint64_t memory_limit_bytes,
    const std::optional<InstanceShare>& share, const CardHolding& held) const {
  const std::string card = xpu::names::device_name(device.index);
  if (share && held.share_holder) {
    std::string holder = held.share_holder->second;
    if (auto record = made_.find(*held.share_holder);
        record != made_.end() && !record->second.owner.empty())
      holder += " (" + record->second.owner + ")";
    else if (record == made_.end())
      holder += " (being made)";
    return DriverChangeError{Kind::InUse, "memory share " + share->key + " of " + card +
                                              " is bounded by cXPU instance " + holder +
                                              " already, whose container " +
                                              "still runs: a share bounds one container at a time"};
  }
  const std::uint64_t total = device.memory_total_bytes;
  if (total != 0 && (memory_limit_bytes > total || held.bytes > total - memory_limit_bytes))
    return DriverChangeError{Kind::InUse, describe(device, key.second) + " of " +
                                              std::to_string(memory_limit_bytes) +
                                              " bytes does not fit: the card's other instances " +
                                              "hold " + std::to_string(held.bytes) + " of its " +
                                              std::to_string(total) + " bytes"};
  return std::nullopt;
}

std::optional<DriverChangeError> InstanceRegistry::create(
    const DeviceIdentity& device, const std::string& id, std::uint64_t memory_limit_bytes,
    std::string owner, std::optional<InstanceShare> share, Reply reply) {
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
  if (share) {
    if (auto refusal = check_instance_share(share->key))
      return DriverChangeError{Kind::InvalidArgument, refusal->message};
    if (!share->container || share->container->exited())
      return DriverChangeError{Kind::InvalidArgument,
                               "the container of " + describe(device, id) +
                                   " has exited already (or `container` is no pidfd of it)"};
  }

  const Key key{device.index, id};
  auto made = made_.find(key);
  const bool exists = made != made_.end() && made->second.uuid == device.uuid;
  // One container with two shares of a card would need one instance bounded by both; the
  // vendor's runtime has no such thing either, so the second is refused rather than merged.
  if (exists && share && !made->second.share.empty() && made->second.share != share->key)
    return DriverChangeError{Kind::InUse, describe(device, id) + " bounds memory share " +
                                              made->second.share +
                                              " already: a container's instance bounds one "
                                              "share of a card"};
  const CardHolding held = holding(device, key, share ? share->key : std::string());
  if (auto refusal = check_bounds(device, key, memory_limit_bytes, share, held)) return refusal;

  Record record{device.uuid, memory_limit_bytes, std::move(owner), {}, {}};
  if (share) {
    record.share = share->key;
    record.container = share->container;
  } else if (exists) {  // root changing a share's instance by hand keeps what it bounds
    record.share = made->second.share;
    record.container = made->second.container;
  }
  if (exists && made->second.memory_limit_bytes == memory_limit_bytes &&
      held.exited_containers.empty()) {
    made->second = std::move(record);
    reply(std::nullopt);
    return std::nullopt;
  }
  changing_[key] = record;
  for (const auto& gone : held.exited_containers)
    changing_[Key{device.index, gone}] = Record{device.uuid, 0, {}, {}, {}};
  // Filled on the driver thread, read by `done` after DriverRequests handed the outcome back.
  auto destroyed = std::make_shared<std::vector<std::string>>();
  auto job = [device, id, memory_limit_bytes, exists, exited = held.exited_containers,
              destroyed](Backend& backend) {
    CxpuInstanceControl* control = backend.cxpu_instances();
    if (control == nullptr)
      return std::optional<DriverChangeError>(
          DriverChangeError{Kind::NotSupported, "the backend has no cXPU instances now"});
    for (const auto& gone : exited) {
      auto error = control->destroy_instance(device, gone);
      if (error && error->kind != Kind::NoSuchInstance) return error;
      destroyed->push_back(gone);
    }
    return exists ? control->set_instance_memory_limit(device, id, memory_limit_bytes)
                  : control->create_instance(device, id, memory_limit_bytes);
  };
  auto done = [this, key, record, exited = held.exited_containers, destroyed,
               reply = std::move(reply)](const std::optional<DriverChangeError>& error) {
    changing_.erase(key);
    for (const auto& gone : exited) changing_.erase(Key{key.first, gone});
    for (const auto& gone : *destroyed) {
      auto it = made_.find(Key{key.first, gone});
      if (it == made_.end() || it->second.uuid != record.uuid) continue;
      spdlog::info(
          "cXPU instance {} on {} destroyed: its container exited without its poststop "
          "hook",
          gone, xpu::names::device_name(key.first));
      made_.erase(it);
    }
    if (!error) made_[key] = record;
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
  changing_[key] = Record{device.uuid, 0, {}, {}, {}};
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
        CxpuInstance{key.first, key.second, record.memory_limit_bytes, record.owner, record.share});
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
