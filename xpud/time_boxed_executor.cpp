#include "xpud/time_boxed_executor.h"

#include <spdlog/spdlog.h>

namespace xpud {

struct TimeBoxedExecutor::Job {
  std::string what;
  std::function<void()> work;
  std::chrono::steady_clock::time_point started;
  bool done = false;
  std::string exception;  // what() of an exception thrown by the call
  std::condition_variable finished;
};

struct TimeBoxedExecutor::State {
  std::mutex mutex;
  std::condition_variable wake_worker;
  std::chrono::milliseconds timeout{};
  std::shared_ptr<Job> pending;  // submitted, not yet picked up
  std::shared_ptr<Job> running;  // on the driver thread now (or last run)
  bool stopping = false;
  bool interrupted = false;  // interrupt(): no more waiting for the driver
};

TimeBoxedExecutor::TimeBoxedExecutor(std::chrono::milliseconds timeout)
    : state_(std::make_shared<State>()) {
  state_->timeout = timeout;
  worker_ = std::thread([state = state_] { worker_loop(state); });
}

TimeBoxedExecutor::~TimeBoxedExecutor() {
  std::string hung_call;
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    if (state_->running && !state_->running->done) hung_call = state_->running->what;
  }
  state_->wake_worker.notify_all();
  if (!hung_call.empty()) {
    // Joining would hang shutdown for as long as the driver does. The thread keeps the shared
    // state alive and exits on its own if the call ever returns.
    spdlog::warn("driver call '{}' still running at shutdown; abandoning it", hung_call);
    worker_.detach();
    return;
  }
  worker_.join();
}

void TimeBoxedExecutor::set_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard lock(state_->mutex);
  state_->timeout = timeout;
}

void TimeBoxedExecutor::interrupt() {
  std::lock_guard lock(state_->mutex);
  state_->interrupted = true;
  // A job submitted but not picked up is never started now: after interrupt(), stuck() can
  // only go from true to false, so the caller may decide on it how to leave.
  state_->wake_worker.notify_all();
  // The caller waits on its own job, picked up by the driver thread or not yet.
  if (state_->pending) state_->pending->finished.notify_all();
  if (state_->running) state_->running->finished.notify_all();
}

bool TimeBoxedExecutor::stuck() const {
  std::lock_guard lock(state_->mutex);
  return state_->running != nullptr && !state_->running->done;
}

std::string TimeBoxedExecutor::stuck_call() const {
  std::lock_guard lock(state_->mutex);
  if (state_->running == nullptr || state_->running->done) return {};
  return state_->running->what;
}

xpu::Status TimeBoxedExecutor::run(const std::string& what, std::function<void()> work) {
  State& s = *state_;
  std::unique_lock lock(s.mutex);
  if (s.interrupted) return xpu::Error{"'" + what + "' not started: xpud is stopping"};
  if (s.running && !s.running->done) {
    auto busy_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - s.running->started);
    return xpu::Error{"driver busy: '" + s.running->what + "' has not returned after " +
                      std::to_string(busy_for.count()) + " ms"};
  }
  auto job = std::make_shared<Job>();
  job->what = what;
  job->work = std::move(work);
  job->started = std::chrono::steady_clock::now();
  s.pending = job;
  s.wake_worker.notify_one();
  if (!job->finished.wait_for(lock, s.timeout, [&] { return job->done || s.interrupted; }))
    return xpu::Error{"'" + what + "' timed out after " + std::to_string(s.timeout.count()) +
                      " ms"};
  if (!job->done) return xpu::Error{"'" + what + "' abandoned: xpud is stopping"};
  if (!job->exception.empty()) return xpu::Error{"'" + what + "' failed: " + job->exception};
  return xpu::ok_status();
}

void TimeBoxedExecutor::worker_loop(const std::shared_ptr<State>& state) {
  State& s = *state;
  std::unique_lock lock(s.mutex);
  while (true) {
    s.wake_worker.wait(lock, [&] { return s.stopping || s.interrupted || s.pending != nullptr; });
    if (s.stopping || s.interrupted) return;
    s.running = std::move(s.pending);
    auto job = s.running;
    lock.unlock();
    std::string exception;
    try {
      job->work();
    } catch (const std::exception& e) {
      exception = e.what();
    } catch (...) {
      exception = "unknown exception";
    }
    lock.lock();
    job->exception = std::move(exception);
    job->done = true;
    job->finished.notify_all();
  }
}

}  // namespace xpud
