// Who may hold how much of a shared, bounded resource (the proxy's client connections, its calls
// waiting on xpud): every uid but root has a cap of its own, and the uids other than root together
// never take the share kept for root. The socket is open to every local user; the cluster's pods
// connect as uid 0. So one local user, or several, can use up their own part and nothing more:
// root's xpuctl and the shim's pods always find room.
//
// Pure bookkeeping, no I/O: unit-tested case by case (uid_budget_test.cpp).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

namespace xpu::api_proxy {

struct BudgetLimits {
  unsigned total = 0;              // for everyone together, root included
  unsigned per_uid = 0;            // for any one uid other than root
  unsigned reserved_for_root = 0;  // of `total`, never taken by the other uids
};

class UidBudget {
 public:
  // `what` names a unit in refusals ("connections", "calls to xpud waiting").
  UidBudget(BudgetLimits limits, std::string what);

  // Takes one unit for `uid`, or says why not. nullopt `uid` (the socket did not say) counts as
  // one more uid other than root.
  std::optional<std::string> take(std::optional<uid_t> uid);
  // Returns a unit `take` gave `uid`.
  void give_back(std::optional<uid_t> uid);

  unsigned in_use() const { return in_use_; }
  unsigned in_use_by(std::optional<uid_t> uid) const;
  const BudgetLimits& limits() const { return limits_; }

 private:
  static uid_t key(std::optional<uid_t> uid);

  BudgetLimits limits_;
  std::string what_;
  unsigned in_use_ = 0;
  unsigned in_use_by_others_ = 0;     // by every uid but root
  std::map<uid_t, unsigned> by_uid_;  // uids other than root holding any
};

}  // namespace xpu::api_proxy
