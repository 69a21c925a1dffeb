#include "xpud/bus/simulator_object.h"

#include <sdbus-c++/sdbus-c++.h>
#include <spdlog/spdlog.h>

#include "common/names.h"
#include "xpud/backends/simulator.h"
#include "xpud/bus/bus_errors.h"
#include "xpud/requests/method_arguments.h"
#include "xpud1/simulator_adaptor.h"

namespace xpud {

namespace names = xpu::names;

class SimulatorObject::Adaptor final
    : public sdbus::AdaptorInterfaces<com::kunlunxin::xpud1::Simulator_adaptor> {
 public:
  Adaptor(sdbus::IConnection& connection, Simulator& simulator, std::function<void()> on_injection)
      : AdaptorInterfaces(connection, std::string(names::kManagerPath)),
        simulator_(simulator),
        on_injection_(std::move(on_injection)) {
    registerAdaptor();
  }
  ~Adaptor() { unregisterAdaptor(); }
  Adaptor(const Adaptor&) = delete;
  Adaptor& operator=(const Adaptor&) = delete;

 private:
  void SetHealth(const uint32_t& index, const std::string& health,
                 const std::string& reason) override {
    authorize();
    if (auto refusal = check_set_health_arguments(health, reason))
      throw sdbus::Error(std::string(refusal->error_name), refusal->message);
    check(simulator_.set_health(index, health == names::kHealthy, reason));
    spdlog::info("simulator: {} set {} ({})", names::device_name(index), health, reason);
    on_injection_();
  }

  void SetMetric(const uint32_t& index, const std::string& key, const double& value) override {
    authorize();
    check(simulator_.set_metric(index, key, value));
    spdlog::info("simulator: {} {} = {}", names::device_name(index), key, value);
    on_injection_();
  }

  void SetResetFails(const uint32_t& index, const bool& fails) override {
    authorize();
    check(simulator_.set_reset_fails(index, fails));
    spdlog::info("simulator: a reset of {} {}", names::device_name(index),
                 fails ? "leaves it as it is" : "cures it");
  }

  void authorize() {
    authorize_root(getObject().getCurrentlyProcessedMessage()->getCredsUid(), "Simulator methods");
  }

  static void check(const std::optional<InjectionError>& error) {
    if (!error) return;
    const auto name = error->kind == InjectionError::Kind::NoSuchDevice
                          ? names::kErrorNoSuchDevice
                          : names::kErrorInvalidArgument;
    throw sdbus::Error(std::string(name), error->message);
  }

  Simulator& simulator_;
  std::function<void()> on_injection_;
};

SimulatorObject::SimulatorObject(sdbus::IConnection& connection, Simulator& simulator,
                                 std::function<void()> on_injection)
    : adaptor_(std::make_unique<Adaptor>(connection, simulator, std::move(on_injection))) {}

SimulatorObject::~SimulatorObject() = default;

}  // namespace xpud
