#include "k8s-shim/node_status/node_status_reporter.h"

namespace shim::node_status {

NodeStatusReporter::NodeStatusReporter(std::unique_ptr<kube::HttpTransport> transport,
                                       std::string node, std::string field_manager,
                                       std::chrono::seconds grace_period,
                                       NodeStatusWriter::Options options)
    : grace_period_(grace_period),
      transport_(std::move(transport)),
      api_(*transport_, std::move(node), std::move(field_manager)),
      writer_(api_, options),
      thread_([this] { run(); }) {}

NodeStatusReporter::~NodeStatusReporter() {
  stop();
}

void NodeStatusReporter::update(const CardState::Snapshot& cards, bool serving) {
  auto condition = xpu_condition(*cards.view, cards.xpud_lost, grace_period_);
  std::lock_guard lock(mutex_);
  // Nothing known (xpud not answered yet) changes nothing: the last condition stands. The first
  // update is news whatever it says: the thread writes nothing before it (run()).
  const bool changed = !updated_ || (condition && condition != condition_) || serving != serving_;
  updated_ = true;
  if (!changed) return;
  if (condition) condition_ = std::move(condition);
  serving_ = serving;
  news_ = true;
  wake_.notify_one();
}

void NodeStatusReporter::stop(OnStop on_stop) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    wake_.notify_one();
  }
  thread_.join();
  if (on_stop == OnStop::kReleaseLabel) writer_.release_ready();
}

void NodeStatusReporter::run() {
  // Nothing before the role's first update: only the role knows whether the node is served (a
  // plugin taking over from one that still serves it says so), and a write before would say it is
  // not, taking the label away from the plugin that serves.
  std::optional<NodeStatusWriter::Clock::time_point> next;
  while (true) {
    std::optional<XpuCondition> condition;
    bool serving = false;
    {
      std::unique_lock lock(mutex_);
      const auto woken = [this] { return news_ || stopping_; };
      if (next)
        wake_.wait_until(lock, *next, woken);
      else
        wake_.wait(lock, woken);
      if (stopping_) return;
      news_ = false;
      condition = condition_;
      serving = serving_;
    }
    const auto wall_now = NodeStatusWriter::WallClock::now();
    writer_.set_condition(condition, wall_now);
    writer_.set_ready(serving);
    next = writer_.reconcile(NodeStatusWriter::Clock::now(), wall_now);
  }
}

}  // namespace shim::node_status
