#include "k8s-shim/node_status/node_status_writer.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "k8s-shim/kube/api_time.h"

namespace shim::node_status {

void NodeStatusWriter::set_condition(const std::optional<XpuCondition>& condition,
                                     WallClock::time_point wall_now) {
  if (!condition) return;  // nothing known: what is there stays
  if (!desired_ || desired_->status != condition->status) desired_since_ = wall_now;
  desired_ = condition;
}

void NodeStatusWriter::set_ready(bool ready) {
  ready_ = ready;
}

bool NodeStatusWriter::read_current() {
  auto observed = api_.get_xpu_condition();
  if (observed) {
    current_ = observed.value();
    return true;
  }
  const kube::ApiError& error = observed.error();
  if (error.code == 403) {
    // Without the right to read the node (a chart older than the writer's RBAC) the condition is
    // written anyway; its transition time then starts at this process's first view.
    spdlog::warn("node {}: cannot read its XPUHealthy condition ({}); writing it without",
                 api_.node(), error.message);
    current_ = std::optional<ObservedCondition>();
    return true;
  }
  spdlog::warn("node {}: reading its XPUHealthy condition failed: {}; retrying", api_.node(),
               error.message);
  return false;
}

bool NodeStatusWriter::write_condition(Clock::time_point now, WallClock::time_point wall_now) {
  const XpuCondition& desired = *desired_;
  const std::optional<ObservedCondition>& current = *current_;
  ConditionBody body{.status = desired.status,
                     .reason = desired.reason,
                     .message = desired.message,
                     .last_heartbeat_time = kube::rfc3339(wall_now),
                     .last_transition_time = {}};
  body.last_transition_time =
      current && current->status == desired.status && !current->last_transition_time.empty()
          ? current->last_transition_time
          : kube::rfc3339(desired_since_);
  auto result = api_.apply_condition(body);
  if (!result) {
    failed(result.error(), "its XPUHealthy condition", now);
    return false;
  }
  ++writes_;
  if (!written_ || written_->status != desired.status || written_->reason != desired.reason)
    spdlog::info("node {}: XPUHealthy {} ({}): {}", api_.node(), desired.status, desired.reason,
                 desired.message);
  current_ = std::optional<ObservedCondition>(ObservedCondition{
      .status = desired.status, .last_transition_time = body.last_transition_time});
  written_ = desired;
  return true;
}

bool NodeStatusWriter::write_ready(Clock::time_point now) {
  auto result = api_.apply_ready_label(ready_);
  if (!result) {
    failed(result.error(), "its label " + std::string(kReadyLabel), now);
    return false;
  }
  ++writes_;
  if (ready_written_ != ready_)
    spdlog::info("node {}: label {}", api_.node(),
                 ready_ ? std::string(kReadyLabel) + "=" + std::string(kReadyValue)
                        : std::string(kReadyLabel) + " released");
  ready_written_ = ready_;
  return true;
}

void NodeStatusWriter::failed(const kube::ApiError& error, std::string_view what,
                              Clock::time_point now) {
  if (error.code == 403 || error.code == 422) {
    // A missing right or the chart's admission policy: an operator's to fix, so said once at
    // error level, and retried at the slowest pace.
    if (!forbidden_logged_)
      spdlog::error(
          "node {}: writing {} refused: {}; the role needs get and patch on nodes and patch on "
          "nodes/status, and the chart's policy xpu-node-status-own-node lets it write only "
          "its own node's XPUHealthy condition and {} label",
          api_.node(), what, error.message, kReadyLabel);
    forbidden_logged_ = true;
    backoff_ = options_.max_retry;
  } else {
    spdlog::warn("node {}: writing {} failed: {}; retrying", api_.node(), what, error.message);
    backoff_ = backoff_ == Clock::duration{} ? options_.first_retry
                                             : std::min(backoff_ * 2, options_.max_retry);
  }
  next_attempt_ = now + backoff_;
}

NodeStatusWriter::Clock::time_point NodeStatusWriter::reconcile(Clock::time_point now,
                                                                WallClock::time_point wall_now) {
  if (now < next_attempt_) return next_attempt_;
  if (desired_ && !current_ && !read_current()) {
    backoff_ = backoff_ == Clock::duration{} ? options_.first_retry
                                             : std::min(backoff_ * 2, options_.max_retry);
    next_attempt_ = now + backoff_;
    return next_attempt_;
  }
  const bool condition_due =
      desired_ && (written_ != desired_ || now - condition_written_at_ >= options_.heartbeat);
  if (condition_due) {
    if (!write_condition(now, wall_now)) return next_attempt_;
    condition_written_at_ = now;
  }
  const bool ready_due = ready_written_ != ready_ || now - ready_written_at_ >= options_.heartbeat;
  if (ready_due) {
    if (!write_ready(now)) return next_attempt_;
    ready_written_at_ = now;
  }
  backoff_ = {};
  Clock::time_point next = ready_written_at_ + options_.heartbeat;
  if (desired_) next = std::min(next, condition_written_at_ + options_.heartbeat);
  return next;
}

bool NodeStatusWriter::release_ready() {
  ready_ = false;
  return write_ready(Clock::now());
}

}  // namespace shim::node_status
