// The cXPU instances xpud makes on the bus's behalf (Manager.CreateInstance,
// CreateShareInstance, DestroyInstance, ListInstances): the arguments checked, the change handed
// to the driver thread, and a record of what was made, since the library has no call that lists
// instances. The record is what holds the bounds: the instances of a card hold at most its
// memory together, and a memory share is bounded by one live container's instance at a time
// (docs/dra-sharing.md, "One bound per share").
//
// Main thread only, like the bus objects that call it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xpud/backends/driver_change.h"
#include "xpud/device.h"
#include "xpud/requests/container_process.h"
#include "xpud/requests/driver_requests.h"

namespace xpud {

struct CxpuInstance {
  unsigned index = 0;  // the card's
  std::string id;
  std::uint64_t memory_limit_bytes = 0;
  std::string owner{};  // "<namespace>/<pod>/<container>", or empty (method_arguments.h)
  std::string share{};  // "<claim uid>/<share id>", or empty: not a share's
};

// The memory share an instance bounds, and the container it bounds it for.
struct InstanceShare {
  std::string key;  // "<claim uid>/<share id>" (check_instance_share)
  // Shared with the request under way; never null.
  std::shared_ptr<const ContainerProcess> container;
};

class InstanceRegistry {
 public:
  using Reply = DriverRequests::Reply;

  explicit InstanceRegistry(DriverRequests& requests) : requests_(requests) {}

  // Whether the backend can make instances at all (Manager.InstancesSupported).
  bool supported() const;

  // Makes instance `id` on `device` with `memory_limit_bytes` of global memory, or gives one
  // made already that limit. A refusal that needs no driver call comes back at once (and
  // `reply` is dropped); otherwise `reply` runs with the outcome, from DriverRequests::deliver().
  // `owner` is recorded with it (for ListInstances), and replaces an earlier one.
  // Refused (InUse) when the card's instances would hold more than its memory, or `share` is
  // bounded by another instance whose container lives. Instances of the card whose container
  // has exited are destroyed first, in the same driver call.
  std::optional<DriverChangeError> create(const DeviceIdentity& device, const std::string& id,
                                          std::uint64_t memory_limit_bytes, std::string owner,
                                          std::optional<InstanceShare> share, Reply reply);
  // Destroys instance `id` on `device`, also one xpud did not make.
  std::optional<DriverChangeError> destroy(const DeviceIdentity& device, const std::string& id,
                                           Reply reply);

  // What xpud made and has not destroyed, by card index and id.
  std::vector<CxpuInstance> list() const;

  // Drops the records of the card at `index`, which is gone (or is another card now): the
  // driver's instances went with it.
  void forget_card(unsigned index);

 private:
  using Key = std::pair<unsigned, std::string>;  // card index, instance id
  struct Record {
    std::string uuid;  // the card's, so that another card at the same index is not taken for it
    std::uint64_t memory_limit_bytes = 0;
    std::string owner;
    std::string share;                                  // empty: no share's
    std::shared_ptr<const ContainerProcess> container;  // null: not known, lives until destroyed
  };
  // What the other instances of a card hold, as a create sees it.
  struct CardHolding {
    std::uint64_t bytes = 0;          // live instances' and those being made, at the larger limit
    std::optional<Key> share_holder;  // a live instance (or one being made) of the share
    std::vector<std::string> exited_containers;  // instance ids to destroy first
  };

  // Refusals common to create and destroy: no instances here, a busy id, a bad id.
  std::optional<DriverChangeError> refuse(const DeviceIdentity& device,
                                          const std::string& id) const;
  CardHolding holding(const DeviceIdentity& device, const Key& key, const std::string& share) const;
  std::optional<DriverChangeError> check_bounds(const DeviceIdentity& device, const Key& key,
                                                std::uint64_t memory_limit_bytes,
                                                const std::optional<InstanceShare>& share,
                                                const CardHolding& held) const;

  DriverRequests& requests_;
  std::map<Key, Record> made_;
  // A driver call for these is under way: for a create, what it will hold (a destroy holds 0).
  std::map<Key, Record> changing_;
};

}  // namespace xpud
