// The Simulator interface on the Manager's path (com.kunlunxin.xpud1.Simulator), only under the
// sim backend: tests and demos set a simulated card's health and metrics through it.
//
// Threads: the daemon's main thread, which owns the connection.
#pragma once

#include <functional>
#include <memory>

#include <sdbus-c++/IConnection.h>

namespace xpud {

class Simulator;

class SimulatorObject {
 public:
  // on_injection runs after a successful call (to sample again at once). `simulator` must outlive
  // the object.
  SimulatorObject(sdbus::IConnection& connection, Simulator& simulator,
                  std::function<void()> on_injection);
  ~SimulatorObject();
  SimulatorObject(const SimulatorObject&) = delete;
  SimulatorObject& operator=(const SimulatorObject&) = delete;

 private:
  class Adaptor;
  std::unique_ptr<Adaptor> adaptor_;
};

}  // namespace xpud
