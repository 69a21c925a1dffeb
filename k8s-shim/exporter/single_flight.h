// Coalesces concurrent calls of one slow operation: while a call is in flight, further callers
// wait for its result instead of starting their own. Two Prometheus servers scraping at once
// then cost xpud one GetMetrics, and a hung xpud delays each scrape by one call timeout, not by
// one per scrape queued before it.
#pragma once

#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <optional>

namespace shim::exporter {

template <typename T>
class SingleFlight {
 public:
  explicit SingleFlight(std::function<T()> call) : call_(std::move(call)) {}

  // How many run() calls took the result of a call already in flight (so far).
  std::size_t joined() const {
    std::lock_guard lock(mutex_);
    return joined_;
  }

  // Thread-safe. The call runs on the thread of the caller that found nothing in flight.
  T run() {
    std::unique_lock lock(mutex_);
    if (in_flight_) {
      ++joined_;
      auto shared = *in_flight_;
      lock.unlock();
      return shared.get();
    }
    std::promise<T> promise;
    in_flight_ = promise.get_future().share();
    lock.unlock();

    std::optional<T> result;
    try {
      result.emplace(call_());
    } catch (...) {
      finish();
      promise.set_exception(std::current_exception());
      throw;
    }
    finish();
    promise.set_value(*result);
    return std::move(*result);
  }

 private:
  void finish() {
    std::lock_guard lock(mutex_);
    in_flight_.reset();
  }

  std::function<T()> call_;
  mutable std::mutex mutex_;
  std::optional<std::shared_future<T>> in_flight_;  // guarded by mutex_
  std::size_t joined_ = 0;                          // guarded by mutex_
};

}  // namespace shim::exporter
