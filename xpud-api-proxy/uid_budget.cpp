#include "xpud-api-proxy/uid_budget.h"

#include <algorithm>
#include <utility>

namespace xpu::api_proxy {
namespace {

// No real account has this uid (it is (uid_t)-1, "no change" to setresuid): it stands for a
// client whose socket did not say who it is.
constexpr uid_t kUnknownUid = static_cast<uid_t>(-1);

}  // namespace

UidBudget::UidBudget(BudgetLimits limits, std::string what)
    : limits_(limits), what_(std::move(what)) {
  limits_.reserved_for_root = std::min(limits_.reserved_for_root, limits_.total);
}

uid_t UidBudget::key(std::optional<uid_t> uid) {
  return uid.value_or(kUnknownUid);
}

std::optional<std::string> UidBudget::take(std::optional<uid_t> uid) {
  if (in_use_ >= limits_.total)
    return "all " + std::to_string(limits_.total) + " " + what_ + " are in use";
  const uid_t who = key(uid);
  if (who != 0) {
    const unsigned others_room = limits_.total - limits_.reserved_for_root;
    if (in_use_by_others_ >= others_room)
      return "the " + std::to_string(others_room) + " " + what_ +
             " open to uids other than 0 are in use (" + std::to_string(limits_.reserved_for_root) +
             " are kept for root)";
    unsigned& mine = by_uid_[who];
    if (mine >= limits_.per_uid)
      return "uid " + (uid ? std::to_string(*uid) : std::string("unknown")) + " holds " +
             std::to_string(mine) + " " + what_ + " already, its limit";
    ++mine;
    ++in_use_by_others_;
  }
  ++in_use_;
  return std::nullopt;
}

void UidBudget::give_back(std::optional<uid_t> uid) {
  if (in_use_ == 0) return;
  const uid_t who = key(uid);
  if (who == 0) {
    if (in_use_ == in_use_by_others_) return;  // root holds none: nothing to return
  } else {
    auto it = by_uid_.find(who);
    if (it == by_uid_.end() || it->second == 0) return;  // never taken: nothing to return
    if (--it->second == 0) by_uid_.erase(it);
    --in_use_by_others_;
  }
  --in_use_;
}

unsigned UidBudget::in_use_by(std::optional<uid_t> uid) const {
  const uid_t who = key(uid);
  if (who == 0) return in_use_ - in_use_by_others_;
  auto it = by_uid_.find(who);
  return it == by_uid_.end() ? 0 : it->second;
}

}  // namespace xpu::api_proxy
