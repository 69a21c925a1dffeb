// The cXPU instances xpud makes on the bus's behalf (Manager.CreateInstance, DestroyInstance,
// ListInstances): the arguments checked, the change handed to the driver thread, and a record of
// what was made, since the library has no call that lists instances.
//
// Main thread only, like the bus objects that call it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "xpud/backends/driver_change.h"
#include "xpud/device.h"
#include "xpud/driver_requests.h"

namespace xpud {

struct CxpuInstance {
  unsigned index = 0;  // the card's
  std::string id;
  std::uint64_t memory_limit_bytes = 0;
  std::string owner{};  // "<namespace>/<pod>/<container>", or empty (method_arguments.h)
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
  std::optional<DriverChangeError> create(const DeviceIdentity& device, const std::string& id,
                                          std::uint64_t memory_limit_bytes, std::string owner,
                                          Reply reply);
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
  };

  // Refusals common to create and destroy: no instances here, a busy id, a bad id.
  std::optional<DriverChangeError> refuse(const DeviceIdentity& device,
                                          const std::string& id) const;

  DriverRequests& requests_;
  std::map<Key, Record> made_;
  std::set<Key> changing_;  // a driver call for these is under way
};

}  // namespace xpud
