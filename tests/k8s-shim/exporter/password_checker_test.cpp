// The password checker as the HTTP server uses it: verdicts through the callback, a right
// password remembered, failures per address counted in a window, a bounded queue, and a stop
// that answers every waiting check.
#include "k8s-shim/exporter/password_checker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/wait.h"

namespace shim::exporter {
namespace {

// bcrypt of "secret" at cost 10 ($2b$) and at cost 4, made with libxcrypt (crypt_gensalt, crypt).
constexpr const char* kSecretCost10 =
    "$2b$10$R9cPBbP7KZQeA7MRXBSPUOvKWFiv4EtlLUPSwNW9tVV38.sCE/6oi";
constexpr const char* kSecretCost4 = "$2b$04$x5q1XXD5OwbNpI4S59xFi.O9S/lpYQomA6kyX3xTUAD18WHYVxo2K";

using Users = std::map<std::string, std::string>;

// Runs one check to its verdict, at once or through the callback.
PasswordVerdict verdict_of(PasswordChecker& checker, const std::string& address,
                           const std::string& user, const std::string& password) {
  auto promise = std::make_shared<std::promise<PasswordVerdict>>();
  auto future = promise->get_future();
  auto at_once = checker.check(address, user, password,
                               [promise](PasswordVerdict v) { promise->set_value(v); });
  if (at_once) return *at_once;
  EXPECT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  return future.get();
}

// Holds the checker's one thread inside a callback until released, so that checks pile up.
struct Gate {
  std::promise<void> entered;
  std::promise<void> opener;
  std::shared_future<void> open = opener.get_future().share();
};

TEST(PasswordChecker, RightPasswordAcceptedThenRememberedWrongOnesRejected) {
  PasswordChecker checker(Users{{"prometheus", kSecretCost10}});
  EXPECT_EQ(verdict_of(checker, "10.0.0.1", "prometheus", "secret"), PasswordVerdict::Accepted);
  // Remembered: decided at once, without a callback.
  auto again = checker.check("10.0.0.2", "prometheus", "secret",
                             [](PasswordVerdict) { ADD_FAILURE() << "checked again"; });
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, PasswordVerdict::Accepted);
  EXPECT_EQ(verdict_of(checker, "10.0.0.1", "prometheus", "Secret"), PasswordVerdict::Rejected);
  EXPECT_EQ(verdict_of(checker, "10.0.0.1", "prometheus", ""), PasswordVerdict::Rejected);
  EXPECT_EQ(verdict_of(checker, "10.0.0.1", "grafana", "secret"), PasswordVerdict::Rejected);
  // htpasswd -B writes $2y$: the same hash under that prefix is the same password.
  std::string y = kSecretCost4;
  y[2] = 'y';
  PasswordChecker apache(Users{{"apache", y}});
  EXPECT_EQ(verdict_of(apache, "10.0.0.1", "apache", "secret"), PasswordVerdict::Accepted);
}

TEST(PasswordChecker, AnAddressPastItsFailuresIsRefusedWithoutACheckUntilItsWindowEnds) {
  auto now = std::chrono::steady_clock::now();
  std::mutex clock_mutex;
  PasswordCheckLimits limits;
  limits.failures_per_address = 3;
  limits.failure_window = std::chrono::seconds(60);
  PasswordChecker checker(Users{{"prometheus", kSecretCost4}}, limits, [&] {
    std::lock_guard lock(clock_mutex);
    return now;
  });
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(verdict_of(checker, "10.0.0.9", "prometheus", "guess"), PasswordVerdict::Rejected);
  auto refused = checker.check("10.0.0.9", "prometheus", "secret",
                               [](PasswordVerdict) { ADD_FAILURE() << "checked past the limit"; });
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, PasswordVerdict::TooManyFailures);
  // Another address is checked as before.
  EXPECT_EQ(verdict_of(checker, "10.0.0.10", "prometheus", "secret"), PasswordVerdict::Accepted);
  // A remembered password passes even from the refused address: a scraper behind the same
  // address as a guesser keeps its access.
  EXPECT_EQ(verdict_of(checker, "10.0.0.9", "prometheus", "secret"), PasswordVerdict::Accepted);
  EXPECT_EQ(verdict_of(checker, "10.0.0.9", "prometheus", "guess"),
            PasswordVerdict::TooManyFailures);
  {
    std::lock_guard lock(clock_mutex);
    now += std::chrono::seconds(61);
  }
  EXPECT_EQ(verdict_of(checker, "10.0.0.9", "prometheus", "guess"), PasswordVerdict::Rejected);
}

TEST(PasswordChecker, AFullQueueAnswersBusyAtOnceAndStopAnswersWhatWaits) {
  PasswordCheckLimits limits;
  limits.threads = 1;
  limits.queue = 2;
  PasswordChecker checker(Users{{"prometheus", kSecretCost4}}, limits);
  Gate gate;
  // The first check holds the thread in its callback.
  ASSERT_FALSE(checker.check("10.0.0.1", "prometheus", "one", [&](PasswordVerdict) {
    gate.entered.set_value();
    gate.open.wait();
  }));
  gate.entered.get_future().wait();
  std::mutex mutex;
  std::vector<PasswordVerdict> waited;
  auto record = [&](PasswordVerdict v) {
    std::lock_guard lock(mutex);
    waited.push_back(v);
  };
  EXPECT_FALSE(checker.check("10.0.0.1", "prometheus", "two", record));
  EXPECT_FALSE(checker.check("10.0.0.1", "prometheus", "three", record));
  auto busy = checker.check("10.0.0.1", "prometheus", "four",
                            [](PasswordVerdict) { ADD_FAILURE() << "queued past the limit"; });
  ASSERT_TRUE(busy);
  EXPECT_EQ(*busy, PasswordVerdict::Busy);

  // stop() answers the two waiting checks Busy before it waits for the thread.
  auto stopped = std::async(std::launch::async, [&] { checker.stop(); });
  EXPECT_TRUE(xpu::test::wait_until([&] {
    std::lock_guard lock(mutex);
    return waited.size() == 2;
  }));
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(waited, (std::vector<PasswordVerdict>{PasswordVerdict::Busy, PasswordVerdict::Busy}));
  }
  gate.opener.set_value();
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto after = checker.check("10.0.0.1", "prometheus", "secret",
                             [](PasswordVerdict) { ADD_FAILURE() << "checked after stop"; });
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, PasswordVerdict::Busy);
}

TEST(PasswordChecker, BcryptCostIsReadFromTheHash) {
  EXPECT_EQ(bcrypt_cost(kSecretCost10), 10u);
  EXPECT_EQ(bcrypt_cost(kSecretCost4), 4u);
  EXPECT_EQ(bcrypt_cost("$2y$12$abc"), 12u);
  EXPECT_EQ(bcrypt_cost("$6$salt$x"), 0u);
  EXPECT_EQ(bcrypt_cost("$2b$x1$abc"), 0u);
  EXPECT_EQ(bcrypt_cost(""), 0u);
}

}  // namespace
}  // namespace shim::exporter
