// How long the sampler may go without completing a cycle before xpud stops feeding systemd's
// watchdog (and so gets restarted).
//
// A cycle is one discovery call plus one read per card, each bounded by call_timeout (a call
// that overruns is abandoned, and the calls after it are skipped as a driver stall), and cycles
// start `interval` apart. A slow-but-alive driver, every call just under call_timeout, therefore
// makes a cycle of (cards + 1) x call_timeout; the allowance covers that, one interval, and a
// fixed margin for scheduling and publishing:
//
//   allowance = interval + (cards + 1) x call_timeout + 5 s
//
// With the defaults (1 s, 2 s) and 8 cards: 1 + 9 x 2 + 5 = 24 s. Only a sampler thread that is
// itself wedged outlasts it; systemd then restarts xpud WatchdogSec after the last ping.
#pragma once

#include <chrono>

namespace xpud {

inline constexpr std::chrono::milliseconds kWatchdogMargin{5000};

std::chrono::milliseconds watchdog_allowance(std::chrono::milliseconds interval,
                                             std::chrono::milliseconds call_timeout,
                                             unsigned cards);

}  // namespace xpud
