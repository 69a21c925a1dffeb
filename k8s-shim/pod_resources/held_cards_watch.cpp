#include "k8s-shim/pod_resources/held_cards_watch.h"

#include <sys/stat.h>

#include <cerrno>

#include <spdlog/spdlog.h>

namespace shim {
namespace {

// The cards as the log names them: UUIDs and indices, at most a few of each.
std::string describe(const HeldCards& held) {
  constexpr std::size_t kNamed = 8;
  std::string out;
  std::size_t named = 0;
  auto add = [&](const std::string& text) {
    if (named++ < kNamed) out += (out.empty() ? "" : ", ") + text;
  };
  for (const auto& uuid : held.uuids) add(uuid);
  for (unsigned index : held.indices) add("xpu-" + std::to_string(index));
  for (const auto& address : held.vfio_functions) add(address);
  if (named > kNamed) out += " and " + std::to_string(named - kNamed) + " more";
  return out.empty() ? "none" : out;
}

}  // namespace

HeldCardsWatch::HeldCardsWatch(Options options, Lister list, Reader read)
    : options_(std::move(options)),
      list_(std::move(list)),
      read_(std::move(read)),
      thread_([this] { run(); }) {}

HeldCardsWatch::~HeldCardsWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

HeldCardsWatch::Snapshot HeldCardsWatch::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

HeldCardsWatch::Snapshot HeldCardsWatch::fresh(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const std::uint64_t ask = ++asks_made_;
  changed_.notify_all();
  changed_.wait_until(lock, deadline, [this, ask] { return stopping_ || asks_answered_ >= ask; });
  return snapshot_;
}

void HeldCardsWatch::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // Every ask made before this List starts is answered by it.
    const std::uint64_t asks = asks_made_;
    lock.unlock();
    ask_once();
    lock.lock();
    asks_answered_ = asks;
    changed_.notify_all();
    changed_.wait_for(lock, options_.refresh,
                      [this] { return stopping_ || asks_made_ > asks_answered_; });
  }
}

void HeldCardsWatch::publish(const HeldCards& held) {
  {
    std::lock_guard lock(mutex_);
    if (snapshot_.answered && snapshot_.held == held) return;
    snapshot_.held = held;
    snapshot_.answered = true;
    ++snapshot_.generation;
  }
  wake_.signal();
}

void HeldCardsWatch::ask_once() {
  struct stat info {};
  if (::stat(options_.socket_path.c_str(), &info) != 0 && errno == ENOENT) {
    if (reach_ != Reach::no_socket && snapshot().answered)
      spdlog::warn(
          "the pod-resources socket {} is gone (the kubelet restarting?): the cards held "
          "through {} stay as last known ({})",
          options_.socket_path, options_.other_path, describe(snapshot().held));
    else if (reach_ != Reach::no_socket)
      spdlog::warn(
          "no pod-resources socket at {}: cards pods hold through {} are not known, and every "
          "card is offered (mount the kubelet's pod-resources directory, served by Kubernetes "
          "1.34 and later, for a node that changes its allocation mode)",
          options_.socket_path, options_.other_path);
    reach_ = Reach::no_socket;
    // A kubelet restarting removes and recreates it: the last answer stays meanwhile.
    if (!snapshot().answered) publish({});
    return;
  }
  if (options_.before_list) options_.before_list();
  auto reply = list_();
  if (!reply) {
    if (reach_ != Reach::failing)
      spdlog::warn("{}; the cards held through {} stay as last known ({})", reply.error(),
                   options_.other_path, describe(snapshot().held));
    reach_ = Reach::failing;
    // Before any answer: none known, and the role waits no longer.
    if (!snapshot().answered) publish({});
    return;
  }
  if (reach_ != Reach::answering)
    spdlog::info("pod-resources answers on {}: reading the cards pods hold through {} every {} ms",
                 options_.socket_path, options_.other_path, options_.refresh.count());
  reach_ = Reach::answering;
  HeldCardsReading reading = read_(*reply);
  if (reading.ignored != last_ignored_) {
    for (const auto& entry : reading.ignored) spdlog::warn("pod-resources: ignored: {}", entry);
    last_ignored_ = std::move(reading.ignored);
  }
  const Snapshot before = snapshot();
  if (!before.answered || before.held != reading.held)
    spdlog::info("cards pods hold through {}: {}", options_.other_path, describe(reading.held));
  publish(reading.held);
}

}  // namespace shim
