// The one way a role gets its cards: CardFeed owns the xpud client (whose watcher follows xpud),
// the CardState the watcher's views go to (the grace period, the generations) and the wake-up a
// role's loop polls for news. A role reads the cards at a time from it, and makes through it the
// one write a role may make to xpud (a card's virtual-function count, --reconfig-vxpu); no role
// holds the client itself, so the grace period is applied to everything a role reads and no part
// of a role sees a view the others do not (README.md).
//
// Threads: watch(), the write and the Watch's end from the role's own thread; the listener runs on
// the watcher's thread; at(), cards_at(), state() and the wake-up from any.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/xpud_client.h"
#include "k8s-shim/cards/card_state.h"
#include "k8s-shim/wake_event.h"

namespace shim {

class CardFeed {
 public:
  using Clock = CardState::Clock;
  // Runs on the watcher's thread after each view from xpud has reached the state (read it with
  // at(now)); must not block for long, nor end the Watch.
  using Listener = std::function<void(Clock::time_point now)>;

  // Follows xpud while it lives: the watcher stops (and the listener with it) when it goes, so
  // it belongs after whatever the listener uses. The write answers an error once it has ended.
  class [[nodiscard]] Watch {
   public:
    ~Watch();
    Watch(Watch&& other) noexcept : feed_(std::exchange(other.feed_, nullptr)) {}
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    Watch& operator=(Watch&&) = delete;

   private:
    friend class CardFeed;  // only watch() makes one
    explicit Watch(CardFeed& feed) : feed_(&feed) {}
    CardFeed* feed_;
  };

  // Opens nothing yet: xpud counts as gone from `start` until the watcher's first view says
  // otherwise (CardState).
  CardFeed(xpu::ClientOptions xpud, Clock::duration grace_period, Clock::time_point start);
  CardFeed(const CardFeed&) = delete;
  CardFeed& operator=(const CardFeed&) = delete;

  // Starts following xpud (one Watch at a time). After each view: the state, then `on_news`, then
  // the wake-up.
  Watch watch(Listener on_news = {});

  CardState::Snapshot at(Clock::time_point now) const { return state_.at(now); }
  std::vector<xpu::DeviceInfo> cards_at(Clock::time_point now) const {
    return state_.cards_at(now);
  }
  // For the parts of a role that take the state itself (their tests feed it views directly).
  const CardState& state() const { return state_; }

  // Readable after news from xpud; clear_wake() once the loop has looked.
  int wake_fd() const { return wake_.fd(); }
  void clear_wake() { wake_.clear(); }

  // The one write: Manager.ConfigureVirtualFunctions for card `index` (xpud's message and error
  // name when it refuses), waiting up to `timeout`.
  xpu::Status configure_virtual_functions(unsigned index, unsigned count,
                                          std::chrono::milliseconds timeout);

 private:
  const xpu::ClientOptions options_;
  CardState state_;
  WakeEvent wake_;
  // While a Watch lives; last, so that its watcher stops before the state and wake-up go.
  std::unique_ptr<xpu::XpudClient> client_;
};

}  // namespace shim
