#include "k8s-shim/exporter/password_checker.h"

#include <gnutls/crypto.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "k8s-shim/exporter/basic_auth.h"

namespace shim::exporter {
namespace {

// SHA-256 of user, NUL, password: what is remembered of a right password, never the password.
std::string digest_of(const std::string& user, const std::string& password) {
  std::string text = user;
  text.push_back('\0');
  text += password;
  std::array<unsigned char, 32> out{};
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, text.data(), text.size(), out.data()) != 0) return {};
  return {reinterpret_cast<const char*>(out.data()), out.size()};
}

std::string costliest(const std::map<std::string, std::string>& users) {
  std::string chosen;
  for (const auto& [user, hash] : users)
    if (chosen.empty() || bcrypt_cost(hash) > bcrypt_cost(chosen)) chosen = hash;
  return chosen;
}

}  // namespace

unsigned bcrypt_cost(const std::string& hash) {
  // "$2b$10$" + salt and hash: the cost is the two digits between the second and third '$'.
  if (hash.size() < 7 || hash[0] != '$' || hash[3] != '$' || hash[6] != '$') return 0;
  unsigned cost = 0;
  const auto [end, error] = std::from_chars(hash.data() + 4, hash.data() + 6, cost);
  return error == std::errc() && end == hash.data() + 6 ? cost : 0;
}

PasswordChecker::PasswordChecker(std::map<std::string, std::string> users,
                                 PasswordCheckLimits limits, Clock clock)
    : users_(std::move(users)),
      dummy_hash_(costliest(users_)),
      limits_(limits),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {
  for (unsigned i = 0; i < std::max(1u, limits_.threads); ++i)
    threads_.emplace_back([this] { work(); });
}

PasswordChecker::~PasswordChecker() {
  stop();
}

void PasswordChecker::stop() {
  std::deque<Job> unchecked;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    unchecked.swap(queue_);
  }
  wake_.notify_all();
  for (auto& job : unchecked) job.done(PasswordVerdict::Busy);
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
}

std::optional<PasswordVerdict> PasswordChecker::check(const std::string& address,
                                                      const std::string& user,
                                                      const std::string& password, Done done) {
  std::string digest = digest_of(user, password);
  std::lock_guard lock(mutex_);
  if (!digest.empty() && remembered_.contains(digest)) return PasswordVerdict::Accepted;
  if (over_failures(address, clock_())) return PasswordVerdict::TooManyFailures;
  if (stopping_ || queue_.size() >= limits_.queue) return PasswordVerdict::Busy;
  queue_.push_back(Job{address, user, password, std::move(digest), std::move(done)});
  wake_.notify_one();
  return std::nullopt;
}

void PasswordChecker::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // stop() answers what is left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const PasswordVerdict verdict = verify(job);
    {
      std::lock_guard lock(mutex_);
      if (verdict == PasswordVerdict::Accepted && !job.digest.empty()) {
        if (remembered_.size() >= limits_.remembered) remembered_.clear();
        remembered_.insert(job.digest);
      } else if (verdict == PasswordVerdict::Rejected) {
        record_failure(job.address, clock_());
      }
    }
    job.done(verdict);
  }
}

PasswordVerdict PasswordChecker::verify(const Job& job) const {
  auto found = users_.find(job.user);
  if (found == users_.end()) {
    // The same work as for a known user, and a refusal whatever the result.
    (void)bcrypt_matches(job.password, dummy_hash_);
    return PasswordVerdict::Rejected;
  }
  return bcrypt_matches(job.password, found->second) ? PasswordVerdict::Accepted
                                                     : PasswordVerdict::Rejected;
}

bool PasswordChecker::over_failures(const std::string& address,
                                    std::chrono::steady_clock::time_point now) {
  auto found = failures_.find(address);
  if (found == failures_.end()) return false;
  if (now - found->second.window_start >= limits_.failure_window) {
    failures_.erase(found);
    return false;
  }
  return found->second.count >= limits_.failures_per_address;
}

void PasswordChecker::record_failure(const std::string& address,
                                     std::chrono::steady_clock::time_point now) {
  auto found = failures_.find(address);
  if (found != failures_.end() && now - found->second.window_start < limits_.failure_window) {
    ++found->second.count;
    return;
  }
  if (found == failures_.end() && failures_.size() >= limits_.tracked_addresses) {
    // Full: the windows that have ended go, and if none has, the oldest.
    std::erase_if(failures_, [&](const auto& entry) {
      return now - entry.second.window_start >= limits_.failure_window;
    });
    if (failures_.size() >= limits_.tracked_addresses)
      failures_.erase(
          std::min_element(failures_.begin(), failures_.end(), [](const auto& a, const auto& b) {
            return a.second.window_start < b.second.window_start;
          }));
  }
  failures_[address] = Failures{1, now};
}

}  // namespace shim::exporter
