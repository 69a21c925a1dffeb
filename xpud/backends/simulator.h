// Fault and value injection for the sim backend, reached through the D-Bus Simulator interface.
// Called from the bus thread; implementations synchronise with their own read().
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xpud {

struct InjectionError {
  enum class Kind { NoSuchDevice, InvalidArgument };
  Kind kind;
  std::string message;
};

class Simulator {
 public:
  virtual ~Simulator() = default;
  // healthy=false makes the card report `reason` as a driver fault until set healthy again.
  virtual std::optional<InjectionError> set_health(unsigned index, bool healthy,
                                                   std::string reason) = 0;
  // Pins a metric (a GetMetrics key) to `value`; NaN releases the pin.
  virtual std::optional<InjectionError> set_metric(unsigned index, std::string_view key,
                                                   double value) = 0;
  // fails=true: a reset of the card leaves it as it was (its injected fault stays), as a card
  // whose fault a reset does not cure; false (the default): a reset cures it.
  virtual std::optional<InjectionError> set_reset_fails(unsigned index, bool fails) = 0;
};

}  // namespace xpud
