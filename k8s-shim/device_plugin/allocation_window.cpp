#include "k8s-shim/device_plugin/allocation_window.h"

#include <algorithm>

namespace shim {

AllocationWindow::Open::Open(AllocationWindow& window) : window_(window) {
  std::lock_guard lock(window_.mutex_);
  ++window_.open_;
}

AllocationWindow::Open::~Open() {
  {
    std::lock_guard lock(window_.mutex_);
    --window_.open_;
    window_.closed_ = Clock::now();
  }
  window_.changed_.notify_all();
}

void AllocationWindow::wait_closed(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  while (Clock::now() < deadline) {
    if (open_ > 0) {
      changed_.wait_until(lock, deadline);
      continue;
    }
    const Clock::time_point settled = closed_ + kSettle;
    if (Clock::now() >= settled) return;
    changed_.wait_until(lock, std::min(settled, deadline));
  }
}

}  // namespace shim
