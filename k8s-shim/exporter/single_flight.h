// Coalesces calls of one slow operation: while a call is in flight, further callers wait for its
// result instead of starting their own; and a result stays good for `reuse_for` after its call
// started. Two Prometheus servers scraping at once then cost xpud one GetMetrics, and a hung
// xpud delays each scrape by one call timeout, not by one per scrape queued before it: the HTTP
// server handles the requests of one connection thread in turn, so scrapes that arrived
// together may reach here one after another, each after the previous call finished.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <optional>

namespace shim::exporter {

template <typename T>
class SingleFlight {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit SingleFlight(std::function<T()> call, std::chrono::milliseconds reuse_for = {},
                        Clock now = &std::chrono::steady_clock::now)
      : call_(std::move(call)), reuse_for_(reuse_for), now_(std::move(now)) {}

  // How many run() calls took the result of another call (in flight or recent), so far.
  std::size_t joined() const {
    std::lock_guard lock(mutex_);
    return joined_;
  }

  // Thread-safe. The call runs on the thread of the caller that found nothing to share.
  T run() {
    std::unique_lock lock(mutex_);
    if (in_flight_) {
      ++joined_;
      auto shared = *in_flight_;
      lock.unlock();
      return shared.get();
    }
    const auto started = now_();
    if (last_ && started - last_->started < reuse_for_) {
      ++joined_;
      return last_->value;
    }
    std::promise<T> promise;
    in_flight_ = promise.get_future().share();
    lock.unlock();

    std::optional<T> result;
    try {
      result.emplace(call_());
    } catch (...) {
      finish(std::nullopt, started);
      promise.set_exception(std::current_exception());
      throw;
    }
    finish(result, started);
    promise.set_value(*result);
    return std::move(*result);
  }

 private:
  struct Recent {
    T value;
    std::chrono::steady_clock::time_point started;
  };

  void finish(const std::optional<T>& result, std::chrono::steady_clock::time_point started) {
    std::lock_guard lock(mutex_);
    in_flight_.reset();
    if (result && reuse_for_.count() > 0) {
      last_.emplace(Recent{*result, started});
    } else {
      last_.reset();  // a call that threw is not remembered: the next caller tries again
    }
  }

  std::function<T()> call_;
  const std::chrono::milliseconds reuse_for_;
  const Clock now_;
  mutable std::mutex mutex_;
  std::optional<std::shared_future<T>> in_flight_;  // guarded by mutex_
  std::optional<Recent> last_;                      // guarded by mutex_
  std::size_t joined_ = 0;                          // guarded by mutex_
};

}  // namespace shim::exporter
