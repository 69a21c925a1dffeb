#include "xpud/watchdog_allowance.h"

namespace xpud {

std::chrono::milliseconds watchdog_allowance(std::chrono::milliseconds interval,
                                             std::chrono::milliseconds call_timeout,
                                             unsigned cards) {
  // Bounded inputs (config: interval <= 1 h, call_timeout <= 60 s; cards from discovery, at most
  // a few thousand), so no overflow in milliseconds.
  return interval + (static_cast<std::chrono::milliseconds::rep>(cards) + 1) * call_timeout +
         kWatchdogMargin;
}

}  // namespace xpud
