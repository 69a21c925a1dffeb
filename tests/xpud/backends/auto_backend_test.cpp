// backend = auto when the library loads but cannot initialise: it serves from the fallback,
// retries with back-off (each attempt time-boxed), switches at a discovery, and keeps the ids
// the fallback published.
#include "xpud/backends/auto_backend.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "tests/support/wait.h"

namespace xpud {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using xpu::test::wait_until;

DeviceIdentity card(unsigned index, std::string uuid) {
  DeviceIdentity id;
  id.index = index;
  id.uuid = std::move(uuid);
  id.pci_bus_id = "0000:3" + std::to_string(index) + ":00.0";
  return id;
}

// A backend with fixed cards that records the ids it was asked to read.
class ScriptedBackend final : public Backend {
 public:
  ScriptedBackend(std::string name, std::vector<DeviceIdentity> cards,
                  std::shared_ptr<std::vector<std::string>> reads = nullptr)
      : name_(std::move(name)), cards_(std::move(cards)), reads_(std::move(reads)) {}
  std::string_view name() const override { return name_; }
  std::string library_path() const override {
    return name_ == "library" ? "/usr/local/xpu/lib64/libxpuml.so.1" : "";
  }
  std::string driver_version() override { return name_ + "-1.0"; }
  xpu::Result<std::vector<DeviceIdentity>> discover() override { return cards_; }
  DeviceReading read(const DeviceIdentity& device) override {
    if (reads_) reads_->push_back(device.uuid);
    return {};
  }

 private:
  std::string name_;
  std::vector<DeviceIdentity> cards_;
  std::shared_ptr<std::vector<std::string>> reads_;
};

// An opener that fails with DRIVER_NOT_LOADED until `succeed_at`, recording when it was called.
struct ScriptedOpener {
  struct State {
    std::mutex mutex;
    std::vector<Clock::time_point> calls;
    unsigned succeed_at = 0;  // 1-based attempt that succeeds
    std::vector<DeviceIdentity> library_cards;
    std::shared_ptr<std::vector<std::string>> reads = std::make_shared<std::vector<std::string>>();
  };
  std::shared_ptr<State> state = std::make_shared<State>();

  AutoBackend::Opener opener() const {
    return [state = state](bool* init_failed) -> xpu::Result<std::unique_ptr<Backend>> {
      std::lock_guard lock(state->mutex);
      state->calls.push_back(Clock::now());
      if (state->calls.size() < state->succeed_at) {
        *init_failed = true;
        return xpu::Error{"xpumlInit(libxpuml.so.1): DRIVER_NOT_LOADED (9)"};
      }
      return std::unique_ptr<Backend>(
          std::make_unique<ScriptedBackend>("library", state->library_cards, state->reads));
    };
  }
  size_t calls() const {
    std::lock_guard lock(state->mutex);
    return state->calls.size();
  }
};

std::unique_ptr<AutoBackend> make(const ScriptedOpener& opener,
                                  std::vector<DeviceIdentity> fallback_cards, RetryBackoff backoff,
                                  std::chrono::milliseconds timeout = 1000ms,
                                  std::shared_ptr<AutoBackend::Attempts> attempts = nullptr) {
  if (!attempts) attempts = std::make_shared<AutoBackend::Attempts>();
  return std::make_unique<AutoBackend>(
      std::make_unique<ScriptedBackend>("sysfs", std::move(fallback_cards)), opener.opener(),
      std::make_unique<TimeBoxedExecutor>(timeout), std::move(attempts),
      "xpumlInit(libxpuml.so.1): DRIVER_NOT_LOADED (9)", backoff);
}

// True once an attempt has handed over an initialised library that no discovery adopted yet.
bool library_ready(AutoBackend::Attempts& attempts) {
  std::lock_guard lock(attempts.mutex);
  return attempts.ready != nullptr;
}

TEST(AutoBackend, ServesTheFallbackUntilAnAttemptSucceedsThenTheLibrary) {
  ScriptedOpener opener;
  opener.state->succeed_at = 4;
  opener.state->library_cards = {card(0, "u0")};
  auto attempts = std::make_shared<AutoBackend::Attempts>();
  auto backend = make(opener, {card(0, "u0")}, RetryBackoff{20ms, 80ms}, 1000ms, attempts);
  EXPECT_EQ(backend->name(), "sysfs");
  ASSERT_TRUE(backend->discover());
  // The opener's fourth call is not yet its reported success: wait for the report itself
  // (under load the retry thread may be descheduled between the two).
  ASSERT_TRUE(wait_until([&] { return library_ready(*attempts); }, 5s));
  EXPECT_EQ(opener.calls(), 4u);
  EXPECT_EQ(backend->name(), "sysfs") << "switches only at a discovery";
  EXPECT_EQ(backend->library_path(), "") << "no library in use while on the fallback";
  ASSERT_TRUE(backend->discover());
  EXPECT_EQ(backend->name(), "xpuml");
  EXPECT_EQ(backend->library_path(), "/usr/local/xpu/lib64/libxpuml.so.1");
  backend->read(card(0, "u0"));
  EXPECT_EQ(*opener.state->reads, std::vector<std::string>{"u0"});
  // No attempt after the one that succeeded.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(opener.calls(), 4u);
}

TEST(AutoBackend, BacksOffDoublingUpToTheLongestWait) {
  ScriptedOpener opener;
  opener.state->succeed_at = 6;
  auto backend = make(opener, {}, RetryBackoff{30ms, 100ms});
  ASSERT_TRUE(wait_until([&] { return opener.calls() >= 6; }, 5s));
  std::lock_guard lock(opener.state->mutex);
  const auto& calls = opener.state->calls;
  // Waits 30, 60, 100 (not 120), 100, 100 ms between attempts.
  const std::vector<std::chrono::milliseconds> expected = {60ms, 100ms, 100ms, 100ms};
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(calls[i + 1] - calls[i]);
    EXPECT_GE(gap, expected[i]) << "between attempts " << i + 1 << " and " << i + 2;
    EXPECT_LT(gap, expected[i] + 500ms) << "between attempts " << i + 1 << " and " << i + 2;
  }
}

TEST(AutoBackend, CardsKeepTheIdsTheFallbackPublished) {
  ScriptedOpener opener;
  opener.state->succeed_at = 1;
  // The library names card 0 its own way; card 1 it names as sysfs did; card 2 is new.
  opener.state->library_cards = {card(0, "library-0"), card(1, "derived-1"), card(2, "library-2")};
  auto backend =
      make(opener, {card(0, "derived-0"), card(1, "derived-1")}, RetryBackoff{10ms, 10ms});
  ASSERT_TRUE(backend->discover());
  ASSERT_TRUE(wait_until([&] { return opener.calls() >= 1; }, 5s));
  std::vector<DeviceIdentity> after;
  ASSERT_TRUE(wait_until(
      [&] {
        auto found = backend->discover();
        if (found) after = *found;
        return backend->name() == "xpuml";
      },
      5s));
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].uuid, "derived-0");
  EXPECT_EQ(after[1].uuid, "derived-1");
  EXPECT_EQ(after[2].uuid, "library-2");
  for (const auto& device : after) backend->read(device);
  // The library is asked about each card under its own name.
  EXPECT_EQ(*opener.state->reads,
            (std::vector<std::string>{"library-0", "derived-1", "library-2"}));
}

// An opener that blocks until released, as xpumlInit does on a half-loaded driver.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  unsigned entered = 0;
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
};

TEST(AutoBackend, AnAttemptThatOverrunsItsTimeBoxStillCountsWhenItReturns) {
  auto gate = std::make_shared<Gate>();
  auto reads = std::make_shared<std::vector<std::string>>();
  AutoBackend::Opener open = [gate, reads](bool*) -> xpu::Result<std::unique_ptr<Backend>> {
    std::unique_lock lock(gate->mutex);
    ++gate->entered;
    gate->changed.wait(lock, [&] { return gate->open; });
    return std::unique_ptr<Backend>(
        std::make_unique<ScriptedBackend>("library", std::vector{card(0, "u0")}, reads));
  };
  AutoBackend backend(std::make_unique<ScriptedBackend>("sysfs", std::vector{card(0, "u0")}), open,
                      std::make_unique<TimeBoxedExecutor>(20ms),
                      std::make_shared<AutoBackend::Attempts>(), "xpumlInit timed out",
                      RetryBackoff{10ms, 20ms});
  // Several time boxes pass; later attempts find the first still running and start nothing.
  std::this_thread::sleep_for(300ms);
  {
    std::lock_guard lock(gate->mutex);
    EXPECT_EQ(gate->entered, 1u);
  }
  EXPECT_EQ(backend.name(), "sysfs");
  gate->release();
  ASSERT_TRUE(wait_until(
      [&] {
        (void)backend.discover();
        return backend.name() == "xpuml";
      },
      5s));
}

TEST(AutoBackend, StopsAtOnceWhileAnAttemptHangs) {
  auto gate = std::make_shared<Gate>();
  AutoBackend::Opener open = [gate](bool*) -> xpu::Result<std::unique_ptr<Backend>> {
    std::unique_lock lock(gate->mutex);
    ++gate->entered;
    gate->changed.wait(lock, [&] { return gate->open; });
    return xpu::Error{"never mind"};
  };
  auto backend = std::make_unique<AutoBackend>(
      std::make_unique<ScriptedBackend>("sysfs", std::vector<DeviceIdentity>{}), open,
      std::make_unique<TimeBoxedExecutor>(60s), std::make_shared<AutoBackend::Attempts>(),
      "xpumlInit timed out", RetryBackoff{1ms, 1ms});
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(gate->mutex);
        return gate->entered == 1;
      },
      5s));
  const auto started = Clock::now();
  backend.reset();
  EXPECT_LT(Clock::now() - started, 1s);
  gate->release();  // the abandoned driver thread finishes on its own
}

}  // namespace
}  // namespace xpud
