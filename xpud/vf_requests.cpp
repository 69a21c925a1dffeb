#include "xpud/vf_requests.h"

#include <utility>

#include "common/names.h"

namespace xpud {

VfRequests::VfRequests(std::shared_ptr<Backend> backend, Sampler& sampler)
    : backend_(std::move(backend)), sampler_(sampler) {}

bool VfRequests::supported() const {
  return backend_->virtual_functions() != nullptr;
}

void VfRequests::start(const DeviceIdentity& device, unsigned count, Reply reply) {
  const std::uint64_t id = next_id_++;
  waiting_.emplace(id, std::move(reply));
  // The job keeps the backend and its result alive on its own: a call that overruns its time
  // box goes on running on the driver thread after the sampler has given up on it.
  auto outcome = std::make_shared<std::optional<VfChangeError>>();
  auto job = [backend = backend_, device, count, outcome] {
    *outcome = backend->virtual_functions()->set_virtual_function_count(device, count);
  };
  auto done = [finished = finished_, id, outcome, device](const xpu::Status& status) {
    std::optional<VfChangeError> result;
    if (!status)
      result = VfChangeError{VfChangeError::Kind::Failed,
                             xpu::names::device_name(device.index) + ": " + status.error()};
    else
      result = *outcome;
    std::lock_guard lock(finished->mutex);
    finished->outcomes.emplace_back(id, std::move(result));
  };
  sampler_.run_driver_job("set virtual functions of " + xpu::names::device_name(device.index),
                          std::move(job), std::move(done));
}

void VfRequests::deliver() {
  std::vector<std::pair<std::uint64_t, std::optional<VfChangeError>>> outcomes;
  {
    std::lock_guard lock(finished_->mutex);
    outcomes.swap(finished_->outcomes);
  }
  for (auto& [id, outcome] : outcomes) {
    auto it = waiting_.find(id);
    if (it == waiting_.end()) continue;
    Reply reply = std::move(it->second);
    waiting_.erase(it);
    reply(outcome);
  }
}

}  // namespace xpud
