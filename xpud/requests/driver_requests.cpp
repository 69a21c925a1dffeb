#include "xpud/requests/driver_requests.h"

#include <utility>

namespace xpud {

DriverRequests::DriverRequests(std::shared_ptr<Backend> backend, Sampler& sampler)
    : backend_(std::move(backend)), sampler_(sampler) {}

void DriverRequests::start(std::string what, Job job, Reply reply) {
  const std::uint64_t id = next_id_++;
  waiting_.emplace(id, std::move(reply));
  // The job keeps the backend and its result alive on its own: a call that overruns its time
  // box goes on running on the driver thread after the sampler has given up on it.
  auto outcome = std::make_shared<std::optional<DriverChangeError>>();
  auto run = [backend = backend_, job = std::move(job), outcome] { *outcome = job(*backend); };
  auto done = [finished = finished_, id, outcome, what](const xpu::Status& status) {
    std::optional<DriverChangeError> result;
    if (!status)
      result = DriverChangeError{DriverChangeError::Kind::Failed, what + ": " + status.error()};
    else
      result = *outcome;
    std::lock_guard lock(finished->mutex);
    finished->outcomes.emplace_back(id, std::move(result));
  };
  sampler_.run_driver_job(std::move(what), std::move(run), std::move(done));
}

void DriverRequests::deliver() {
  std::vector<std::pair<std::uint64_t, std::optional<DriverChangeError>>> outcomes;
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
