#include "k8s-shim/dra/slices/slice_publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "k8s-shim/dra/dra_names.h"
#include "k8s-shim/dra/slices/slice_content.h"

namespace shim::dra {

namespace {

std::size_t device_count(const std::vector<ResourceSliceSpec>& slices) {
  std::size_t count = 0;
  for (const ResourceSliceSpec& slice : slices) count += slice.devices.size();
  return count;
}

bool has_counters(const ResourceSliceSpec& spec) {
  return !spec.shared_counters.empty() ||
         std::any_of(spec.devices.begin(), spec.devices.end(),
                     [](const SliceDevice& device) { return !device.consumes_counters.empty(); });
}

const SliceDevice* find_device(const std::vector<ResourceSlice>& slices, std::string_view name) {
  for (const ResourceSlice& slice : slices)
    for (const SliceDevice& device : slice.spec.devices)
      if (device.name == name) return &device;
  return nullptr;
}

}  // namespace

SlicePublisher::SlicePublisher(KubeApi& api, std::string node_name, TaintPolicy taints,
                               SharePolicy shares)
    : api_(api),
      node_name_(std::move(node_name)),
      taint_policy_(std::move(taints)),
      share_policy_(shares) {}

bool SlicePublisher::set_devices(const xpu::DeviceView& view) {
  if (!view.xpud_present && view.devices.empty()) return false;
  std::vector<std::string> omitted;
  std::vector<ResourceSliceSpec> slices =
      desired_slices(view, node_name_, 0, &omitted, taint_policy_, share_policy_);
  std::lock_guard lock(desired_mutex_);
  if (desired_ && desired_->slices == slices) return false;
  // Logged only on a change, so a steady problem is said once, not per watcher event.
  for (const std::string& why : omitted) spdlog::warn("dra: ResourceSlice: {}", why);
  std::uint64_t version = desired_ ? desired_->version + 1 : 1;
  desired_ = Desired{.slices = std::move(slices), .version = version};
  return true;
}

std::vector<ResourceSliceSpec> SlicePublisher::specs_for(const Desired& desired,
                                                         std::int64_t generation) const {
  std::vector<ResourceSliceSpec> specs =
      server_keeps_counters_ ? desired.slices : without_counters(desired.slices);
  for (ResourceSliceSpec& spec : specs) {
    spec.pool.generation = generation;
    for (SliceDevice& device : spec.devices) {
      if (!server_keeps_taints_) {
        device.taints.clear();
        continue;
      }
      if (device.taints.empty()) continue;
      const SliceDevice* was = find_device(published_, device.name);
      if (!was) continue;
      for (DeviceTaint& taint : device.taints) {
        auto same = std::find(was->taints.begin(), was->taints.end(), taint);
        if (same != was->taints.end()) taint.time_added = same->time_added;
      }
    }
  }
  return specs;
}

bool SlicePublisher::holds(std::vector<ResourceSlice>& slices, const Desired& desired) const {
  if (slices.empty()) return false;
  const std::int64_t generation = slices.front().spec.pool.generation;
  std::vector<ResourceSliceSpec> wanted = specs_for(desired, generation);
  if (slices.size() != wanted.size()) return false;
  std::vector<ResourceSlice> ordered;
  ordered.reserve(wanted.size());
  for (const ResourceSliceSpec& spec : wanted) {
    auto match = std::find_if(slices.begin(), slices.end(),
                              [&](const ResourceSlice& slice) { return slice.spec == spec; });
    if (match == slices.end()) return false;
    ordered.push_back(std::move(*match));
    slices.erase(match);
  }
  slices = std::move(ordered);
  return true;
}

SlicePublisher::Clock::time_point SlicePublisher::reconcile(Clock::time_point now) {
  if (now < next_attempt_) return next_attempt_;
  std::optional<Desired> desired;
  {
    std::lock_guard lock(desired_mutex_);
    desired = desired_;
  }
  if (!desired) return now + kResync;  // xpud never answered: nothing to say yet
  if (!published_.empty() && now >= next_resync_) need_list_ = true;

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

bool SlicePublisher::up_to_date() const {
  std::lock_guard lock(desired_mutex_);
  return desired_ && published_version_ == desired_->version;
}

void SlicePublisher::note_failure(const kube::ApiError& error) {
  // Once per streak: a down API server must not fill the log every back-off step.
  if (!failing_) spdlog::warn("dra: ResourceSlice of node {}: {}", node_name_, error.message);
  failing_ = true;
}

SlicePublisher::Outcome SlicePublisher::sync(const Desired& desired) {
  if (need_list_) return relist_and_converge(desired);
  if (published_version_ == desired.version) return Outcome::done;
  // The pool changed and changed back: what the API holds is already right.
  std::vector<ResourceSlice> published = published_;
  if (holds(published, desired)) {
    published_version_ = desired.version;
    return Outcome::done;
  }
  return write_pool(desired, published_);
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
  for (const ResourceSlice& slice : published_)
    highest_generation_ = std::max(highest_generation_, slice.spec.pool.generation);
  // Newest first: these are the ones kept when the pool is rewritten.
  std::stable_sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) {
    return a.spec.pool.generation > b.spec.pool.generation;
  });

  // The newest generation already right (perhaps beside older slices whose delete failed: the
  // scheduler reads only the newest generation, so deleting them suffices).
  if (!slices.empty()) {
    const std::int64_t newest = slices.front().spec.pool.generation;
    auto older = std::find_if(slices.begin(), slices.end(), [&](const ResourceSlice& slice) {
      return slice.spec.pool.generation != newest;
    });
    std::vector<ResourceSlice> current(std::make_move_iterator(slices.begin()),
                                       std::make_move_iterator(older));
    if (holds(current, desired)) {
      std::vector<ResourceSlice> extras(std::make_move_iterator(older),
                                        std::make_move_iterator(slices.end()));
      published_ = std::move(current);
      published_version_ = desired.version;
      need_list_ = false;
      return delete_extras(extras) ? Outcome::done : Outcome::failed;
    }
    std::move(current.begin(), current.end(), slices.begin());  // back in place for reuse
  }
  return write_pool(desired, std::move(slices));
}

SlicePublisher::Outcome SlicePublisher::write_pool(const Desired& desired,
                                                   std::vector<ResourceSlice> existing) {
  const std::int64_t generation = highest_generation_ + 1;
  std::vector<ResourceSliceSpec> specs = specs_for(desired, generation);
  std::vector<ResourceSlice> written;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ResourceSlice slice;
    if (i < existing.size()) {
      slice.name = existing[i].name;
      slice.resource_version = existing[i].resource_version;
      slice.uid = existing[i].uid;
    }
    slice.spec = specs[i];
    auto result =
        i < existing.size() ? api_.update_resource_slice(slice) : api_.create_resource_slice(slice);
    if (!result) {
      // A part of the pool may be written: the relist that follows finds a newest generation
      // short of slices, and writes the whole pool again one generation higher.
      need_list_ = true;
      highest_generation_ = std::max(highest_generation_, i > 0 ? generation : 0);
      // Someone else changed or deleted a slice since we read it: relist and try again.
      if (i < existing.size() && (result.error().conflict() || result.error().not_found())) {
        conflict_ = result.error();
        return Outcome::retry_now;
      }
      note_failure(result.error());
      return Outcome::failed;
    }
    ++writes_;
    note_server_dropped_taints(specs[i], result.value());
    const bool counters_dropped = note_server_dropped_counters(specs[i], result.value());
    written.push_back(std::move(result).value());
    if (counters_dropped) {
      // What was written is no pool the scheduler should read (devices that consume counters
      // no slice has, or shares without them): the pool without counters, one generation up,
      // over the same slices.
      highest_generation_ = generation;
      for (std::size_t j = i + 1; j < existing.size(); ++j)
        written.push_back(std::move(existing[j]));
      return write_pool(desired, std::move(written));
    }
  }
  std::vector<ResourceSlice> extras;
  for (std::size_t i = specs.size(); i < existing.size(); ++i)
    extras.push_back(std::move(existing[i]));

  published_ = std::move(written);
  highest_generation_ = generation;
  published_version_ = desired.version;
  need_list_ = false;
  std::size_t counter_sets = 0;
  for (const ResourceSliceSpec& spec : specs) counter_sets += spec.shared_counters.size();
  spdlog::info(
      "dra: published the pool of node {} at generation {}: {} ResourceSlice(s), {} devices, {} "
      "counter sets",
      node_name_, generation, published_.size(), device_count(specs), counter_sets);
  return delete_extras(extras) ? Outcome::done : Outcome::failed;
}

void SlicePublisher::note_server_dropped_taints(const ResourceSliceSpec& sent,
                                                const ResourceSlice& written) {
  auto has_taints = [](const std::vector<SliceDevice>& devices) {
    return std::any_of(devices.begin(), devices.end(),
                       [](const SliceDevice& device) { return !device.taints.empty(); });
  };
  if (!server_keeps_taints_ || !has_taints(sent.devices) || has_taints(written.spec.devices))
    return;
  server_keeps_taints_ = false;
  spdlog::warn(
      "dra: the API server dropped the devices' taints from ResourceSlice {} (Kubernetes "
      "before 1.36, or DRADeviceTaints off): unhealthy cards are marked by their healthy "
      "attribute only",
      written.name);
}

bool SlicePublisher::note_server_dropped_counters(const ResourceSliceSpec& sent,
                                                  const ResourceSlice& written) {
  if (!server_keeps_counters_ || !has_counters(sent) || has_counters(written.spec)) return false;
  server_keeps_counters_ = false;
  const bool shares =
      std::any_of(sent.devices.begin(), sent.devices.end(),
                  [](const SliceDevice& device) { return device.allow_multiple_allocations; });
  spdlog::warn(
      "dra: the API server dropped the counters from ResourceSlice {} (Kubernetes before 1.36, "
      "or DRAPartitionableDevices off): the pool is published without counters{}",
      written.name,
      share_policy_.enabled || shares
          ? ", and without memory shares, which need them (--memory-shares is not in effect)"
          : "; virtual functions are still offered, their physical function never");
  return true;
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
