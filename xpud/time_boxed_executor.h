// Runs driver calls on one dedicated thread and waits for each at most a fixed time, so a slow or
// hung driver never stalls the sampler (and through it the watchdog, the bus or a scrape).
//
// A call that overruns is reported as timed out and left to finish on the driver thread; until it
// does, further calls fail at once with "driver busy" instead of queueing behind it. A driver that
// never returns therefore costs one thread; the sampler reports it as a driver stall
// (driver_stall.h), not as failing cards.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

#include "common/result.h"

namespace xpud {

class TimeBoxedExecutor {
 public:
  explicit TimeBoxedExecutor(std::chrono::milliseconds timeout);
  ~TimeBoxedExecutor();
  TimeBoxedExecutor(const TimeBoxedExecutor&) = delete;
  TimeBoxedExecutor& operator=(const TimeBoxedExecutor&) = delete;

  void set_timeout(std::chrono::milliseconds timeout);

  // Runs fn() on the driver thread. `what` names the call in errors ("read xpu3").
  template <typename Fn>
  xpu::Result<std::invoke_result_t<Fn>> call(const std::string& what, Fn&& fn) {
    using T = std::invoke_result_t<Fn>;
    auto slot = std::make_shared<std::optional<T>>();
    auto status = run(what, [slot, f = std::forward<Fn>(fn)]() mutable { slot->emplace(f()); });
    if (!status) return xpu::Error{status.error()};
    return std::move(**slot);
  }

  // True while a timed-out call is still running on the driver thread.
  bool stuck() const;
  // The `what` of that call ("read xpu3"); empty when none is stuck.
  std::string stuck_call() const;

  // xpud is stopping: the call being waited for, and every later one, returns an error at once
  // instead of waiting out its timeout (which may be a minute), so SIGTERM is never held up by
  // the driver.
  void interrupt();

 private:
  struct Job;
  // Shared with the driver thread, so that a thread abandoned in a hung call never touches
  // freed memory when it finally returns.
  struct State;
  xpu::Status run(const std::string& what, std::function<void()> work);
  static void worker_loop(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread worker_;
};

}  // namespace xpud
