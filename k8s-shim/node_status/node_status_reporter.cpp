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
  // Nothing known (xpud not answered yet) changes nothing: the last condition stands.
  const bool changed = (condition && condition != condition_) || serving != serving_;
  if (!changed) return;
  if (condition) condition_ = std::move(condition);
  serving_ = serving;
  news_ = true;
  wake_.notify_one();
}

void NodeStatusReporter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    wake_.notify_one();
  }
  thread_.join();
  writer_.release_ready();
}

void NodeStatusReporter::run() {
  NodeStatusWriter::Clock::time_point next = NodeStatusWriter::Clock::now();
  while (true) {
    std::optional<XpuCondition> condition;
    bool serving = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, next, [this] { return news_ || stopping_; });
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
