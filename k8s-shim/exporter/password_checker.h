// Basic-auth passwords checked off the HTTP event threads. A bcrypt check is slow by design
// (exporter README: its cost at 10 and 12), and an event thread serves many connections, so
// the check runs on a thread of its own: the event thread suspends the request and the verdict
// resumes it. What a client can make the checker spend is bounded: the checks waiting in its
// queue, and the failures one address may have in a window before it is refused without a check.
// A password found right is remembered, as a SHA-256 of the user and the password, so that a
// scraper pays bcrypt on its first request only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace shim::exporter {

enum class PasswordVerdict {
  Accepted,
  Rejected,         // an unknown user or a wrong password
  Busy,             // the queue of checks is full: try again
  TooManyFailures,  // this address failed too often of late: refused without a check
};

struct PasswordCheckLimits {
  unsigned threads = 1;                // a core's worth at most: the scrapes need the others
  std::size_t queue = 8;               // checks waiting: under a scrape timeout even at cost 12
  unsigned failures_per_address = 10;  // within failure_window, then TooManyFailures
  std::chrono::seconds failure_window{60};
  std::size_t remembered = 256;          // right passwords kept; forgotten all at once when full
  std::size_t tracked_addresses = 4096;  // failing addresses kept; the oldest windows go first
};

class PasswordChecker {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Done = std::function<void(PasswordVerdict)>;

  // `users` maps each user to a bcrypt hash (checked by check_bcrypt_hash already). An unknown
  // user's password is checked against the costliest of them, so that timing does not tell
  // which user names exist.
  explicit PasswordChecker(std::map<std::string, std::string> users,
                           PasswordCheckLimits limits = {}, Clock clock = {});
  // Answers Busy to the checks still waiting and joins the threads: every `done` has been called
  // when it returns, and later checks are answered Busy at once. Idempotent.
  void stop();
  ~PasswordChecker();  // stop()
  PasswordChecker(const PasswordChecker&) = delete;
  PasswordChecker& operator=(const PasswordChecker&) = delete;

  // Decides at once when it can (a remembered password, an address over its failures, a full
  // queue) and returns the verdict without calling `done`. Otherwise it queues the check and
  // returns nothing; `done` is then called once, on the checker's thread, with the verdict.
  // `address` is the client's (numeric, as the server sees it).
  std::optional<PasswordVerdict> check(const std::string& address, const std::string& user,
                                       const std::string& password, Done done);

 private:
  struct Job {
    std::string address;
    std::string user;
    std::string password;
    std::string digest;
    Done done;
  };
  struct Failures {
    unsigned count = 0;
    std::chrono::steady_clock::time_point window_start;
  };

  void work();
  PasswordVerdict verify(const Job& job) const;
  // With mutex_ held.
  bool over_failures(const std::string& address, std::chrono::steady_clock::time_point now);
  void record_failure(const std::string& address, std::chrono::steady_clock::time_point now);

  const std::map<std::string, std::string> users_;
  const std::string dummy_hash_;  // the costliest of users_' hashes
  const PasswordCheckLimits limits_;
  const Clock clock_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::unordered_set<std::string> remembered_;  // digests of right (user, password) pairs
  std::unordered_map<std::string, Failures> failures_;
  std::vector<std::thread> threads_;  // last: started when everything above is ready
};

// The bcrypt cost of a `$2?$NN$...` hash, or 0 when it has none.
unsigned bcrypt_cost(const std::string& hash);

}  // namespace shim::exporter
