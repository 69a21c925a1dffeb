#include "k8s-shim/dra/kube/slice_publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/kube/slice_content.h"

namespace shim::dra {

SlicePublisher::SlicePublisher(KubeApi& api, std::string node_name, TaintPolicy taints)
    : api_(api), node_name_(std::move(node_name)), taint_policy_(std::move(taints)) {}

bool SlicePublisher::set_devices(const xpu::DeviceView& view) {
  if (!view.xpud_present && view.devices.empty()) return false;
  std::vector<std::string> omitted;
  ResourceSliceSpec spec = desired_slice(view, node_name_, 0, &omitted, taint_policy_);
  std::lock_guard lock(desired_mutex_);
  if (desired_ && desired_->devices == spec.devices) return false;
  // Logged only on a change, so a steady problem is said once, not per watcher event.
  for (const std::string& why : omitted) spdlog::warn("dra: ResourceSlice: {}", why);
  std::uint64_t version = desired_ ? desired_->version + 1 : 1;
  desired_ = Desired{.devices = std::move(spec.devices), .version = version};
  return true;
}

ResourceSliceSpec SlicePublisher::spec_for(const Desired& desired, std::int64_t generation) const {
  std::vector<SliceDevice> devices = desired.devices;
  for (SliceDevice& device : devices) {
    if (!server_keeps_taints_) {
      device.taints.clear();
      continue;
    }
    if (device.taints.empty() || !published_) continue;
    auto was = std::find_if(published_->spec.devices.begin(), published_->spec.devices.end(),
                            [&](const SliceDevice& d) { return d.name == device.name; });
    if (was == published_->spec.devices.end()) continue;
    for (DeviceTaint& taint : device.taints) {
      auto same = std::find(was->taints.begin(), was->taints.end(), taint);
      if (same != was->taints.end()) taint.time_added = same->time_added;
    }
  }
  return ResourceSliceSpec{
      .driver = std::string(kDriverName),
      .node_name = node_name_,
      .pool = SlicePool{.name = node_name_, .generation = generation, .resource_slice_count = 1},
      .devices = std::move(devices),
  };
}

SlicePublisher::Clock::time_point SlicePublisher::reconcile(Clock::time_point now) {
  if (now < next_attempt_) return next_attempt_;
  std::optional<Desired> desired;
  {
    std::lock_guard lock(desired_mutex_);
    desired = desired_;
  }
  if (!desired) return now + kResync;  // xpud never answered: nothing to say yet
  if (published_ && now >= next_resync_) need_list_ = true;

  Outcome outcome = sync(*desired);
  if (outcome == Outcome::retry_now) {
    // A 409 or 404: someone else changed the slice. Once at once with fresh state; a second
    // conflict in a row waits for the back-off like any failure.
    need_list_ = true;
    outcome = sync(*desired);
    if (outcome == Outcome::retry_now) {
      note_failure(conflict_);
      outcome = Outcome::failed;
    }
  }
  if (outcome == Outcome::failed) {
    backoff_ =
        backoff_ == std::chrono::seconds{0} ? kFirstRetry : std::min(backoff_ * 2, kMaxRetry);
    next_attempt_ = now + backoff_;
    return next_attempt_;
  }
  if (failing_) spdlog::info("dra: ResourceSlice of node {} in sync again", node_name_);
  failing_ = false;
  backoff_ = std::chrono::seconds{0};
  next_attempt_ = {};
  next_resync_ = std::max(next_resync_, now);
  if (next_resync_ == now) next_resync_ = now + kResync;
  return next_resync_;
}

void SlicePublisher::note_failure(const ApiError& error) {
  // Once per streak: a down API server must not fill the log every back-off step.
  if (!failing_) spdlog::warn("dra: ResourceSlice of node {}: {}", node_name_, error.message);
  failing_ = true;
}

SlicePublisher::Outcome SlicePublisher::sync(const Desired& desired) {
  if (need_list_) return relist_and_converge(desired);
  if (published_ && published_version_ == desired.version) return Outcome::done;
  return write_change(desired);
}

SlicePublisher::Outcome SlicePublisher::relist_and_converge(const Desired& desired) {
  auto listed = api_.list_resource_slices(kDriverName, node_name_);
  if (!listed) {
    note_failure(listed.error());
    return Outcome::failed;
  }
  std::vector<ResourceSlice>& slices = listed.value();
  for (const ResourceSlice& slice : slices)
    highest_generation_ = std::max(highest_generation_, slice.spec.pool.generation);
  if (published_)
    highest_generation_ = std::max(highest_generation_, published_->spec.pool.generation);

  if (slices.size() == 1 &&
      slices.front().spec == spec_for(desired, slices.front().spec.pool.generation)) {
    published_ = std::move(slices.front());
    published_version_ = desired.version;
    need_list_ = false;
    return Outcome::done;
  }

  // Several slices, the newest already right and alone at its generation (a previous delete of
  // the others failed): the scheduler reads only the newest generation, so deleting suffices.
  if (slices.size() > 1) {
    auto newest = std::max_element(slices.begin(), slices.end(), [](const auto& a, const auto& b) {
      return a.spec.pool.generation < b.spec.pool.generation;
    });
    std::int64_t newest_generation = newest->spec.pool.generation;
    bool alone = std::count_if(slices.begin(), slices.end(), [&](const auto& s) {
                   return s.spec.pool.generation == newest_generation;
                 }) == 1;
    if (alone && newest->spec == spec_for(desired, newest_generation)) {
      std::vector<ResourceSlice> extras;
      for (auto it = slices.begin(); it != slices.end(); ++it)
        if (it != newest) extras.push_back(std::move(*it));
      published_ = std::move(*newest);
      published_version_ = desired.version;
      need_list_ = false;
      return delete_extras(extras) ? Outcome::done : Outcome::failed;
    }
  }

  std::int64_t generation = highest_generation_ + 1;
  ResourceSlice slice;
  slice.spec = spec_for(desired, generation);
  std::vector<ResourceSlice> extras;
  if (slices.empty()) {
    auto created = api_.create_resource_slice(slice);
    if (!created) {
      note_failure(created.error());
      return Outcome::failed;
    }
    record_write(std::move(created).value(), desired, generation);
  } else {
    // Keep the newest (highest generation) and delete the others once it is written, so the pool
    // is never without a slice in between.
    auto keep = std::max_element(slices.begin(), slices.end(), [](const auto& a, const auto& b) {
      return a.spec.pool.generation < b.spec.pool.generation;
    });
    slice.name = keep->name;
    slice.resource_version = keep->resource_version;
    slice.uid = keep->uid;
    for (auto it = slices.begin(); it != slices.end(); ++it)
      if (it != keep) extras.push_back(std::move(*it));
    if (Outcome sent = send_update(slice, desired, generation); sent != Outcome::done) return sent;
  }
  need_list_ = false;
  return delete_extras(extras) ? Outcome::done : Outcome::failed;
}

SlicePublisher::Outcome SlicePublisher::write_change(const Desired& desired) {
  // The list changed and changed back: what the API holds is already right.
  if (published_->spec.devices == spec_for(desired, 0).devices) {
    published_version_ = desired.version;
    return Outcome::done;
  }
  std::int64_t generation = highest_generation_ + 1;
  ResourceSlice slice = *published_;
  slice.spec = spec_for(desired, generation);
  return send_update(slice, desired, generation);
}

SlicePublisher::Outcome SlicePublisher::send_update(const ResourceSlice& slice,
                                                    const Desired& desired,
                                                    std::int64_t generation) {
  auto updated = api_.update_resource_slice(slice);
  if (!updated) {
    // Someone else changed or deleted the slice since we read it: relist and try again.
    if (updated.error().conflict() || updated.error().not_found()) {
      conflict_ = updated.error();
      return Outcome::retry_now;
    }
    note_failure(updated.error());
    return Outcome::failed;
  }
  record_write(std::move(updated).value(), desired, generation);
  return Outcome::done;
}

void SlicePublisher::record_write(ResourceSlice written, const Desired& desired,
                                  std::int64_t generation) {
  ++writes_;
  auto has_taints = [](const std::vector<SliceDevice>& devices) {
    return std::any_of(devices.begin(), devices.end(),
                       [](const SliceDevice& device) { return !device.taints.empty(); });
  };
  if (server_keeps_taints_ && has_taints(desired.devices) && !has_taints(written.spec.devices)) {
    server_keeps_taints_ = false;
    spdlog::warn(
        "dra: the API server dropped the devices' taints from ResourceSlice {} (Kubernetes "
        "before 1.36, or DRADeviceTaints off): unhealthy cards are marked by their healthy "
        "attribute only",
        written.name);
  }
  published_ = std::move(written);
  highest_generation_ = generation;
  published_version_ = desired.version;
  spdlog::info("dra: published ResourceSlice {} of node {}: {} devices, generation {}",
               published_->name, node_name_, desired.devices.size(), generation);
}

bool SlicePublisher::delete_extras(const std::vector<ResourceSlice>& extras) {
  bool all_gone = true;
  for (const ResourceSlice& extra : extras) {
    auto deleted = api_.delete_resource_slice(extra.name);
    if (deleted) {
      ++writes_;
      spdlog::info("dra: deleted extra ResourceSlice {} of node {}", extra.name, node_name_);
    } else if (!deleted.error().not_found()) {
      // Retried after the back-off: the relist finds it again.
      note_failure(deleted.error());
      need_list_ = true;
      all_gone = false;
    }
  }
  return all_gone;
}

}  // namespace shim::dra
