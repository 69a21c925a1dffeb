// Follows the kubelet's pod-resources List for the cards held through the other way of handing
// cards out (held_cards.h): asks at once, then every `refresh`, on a thread of its own (a slow
// kubelet delays only this thread, by the List's deadline at most), and wakes the role's loop
// when the answer changes. The role asks first_answered() before its first offer, so no card a
// pod holds is ever offered for a moment.
//
// Without an answer the cards are the last known: none before the first, and the last answer's
// while the kubelet restarts (a pod keeps its card through a kubelet restart, and the kubelet
// removes and recreates the socket). No socket from the start (a kubelet that does not serve
// it, or a deployment that does not mount it) is logged once and holds no card: the role behaves
// as it did before it read pod-resources.
//
// A decision that hands a card out (the device plugin's GetPreferredAllocation and Allocate, the
// DRA driver's prepare) asks for a fresh answer (fresh()): a refresh's answer can be up to
// `refresh` old, and a pod the other way started meanwhile holds a card that answer shows free.
//
// Threads: its own thread asks and logs; snapshot(), fresh() and the wake-up from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "k8s-shim/pod_resources/held_cards.h"
#include "k8s-shim/wake_event.h"

namespace shim {

class HeldCardsWatch {
 public:
  // One List: the reply, or why there is none.
  using Lister = std::function<xpu::Result<v1::ListPodResourcesResponse>()>;
  // Reads a reply as the role needs it (cards_held_by_device_plugin or cards_held_through_dra).
  using Reader = std::function<HeldCardsReading(const v1::ListPodResourcesResponse&)>;

  struct Options {
    std::string socket_path;  // where the kubelet serves pod-resources (to tell "none" apart)
    std::chrono::milliseconds refresh{2000};
    // "the device plugin" / "DRA claims": how the log names the other way.
    std::string other_path;
    // Called on the watch's thread right before each List; may wait (the device plugin waits
    // out its Allocate calls there: k8s-shim/device_plugin/allocation_window.h).
    std::function<void()> before_list = nullptr;
  };

  // Starts asking at once.
  HeldCardsWatch(Options options, Lister list, Reader read);
  ~HeldCardsWatch();  // stops and joins the thread
  HeldCardsWatch(const HeldCardsWatch&) = delete;
  HeldCardsWatch& operator=(const HeldCardsWatch&) = delete;

  struct Snapshot {
    HeldCards held;
    std::uint64_t generation = 0;  // moves whenever `held` or `answered` changes
    // The first List has been answered, failed or found no socket.
    bool answered = false;
  };
  Snapshot snapshot() const;
  // Has the thread ask again now (not at the next refresh) and waits for that answer, or for a
  // failed List or a missing socket, until `deadline`; then returns the snapshot as it is (the
  // last known cards when no answer came in time). Many callers at once share one List.
  Snapshot fresh(std::chrono::steady_clock::time_point deadline);

  // Readable after a change; clear_wake() once the loop has looked.
  int wake_fd() const { return wake_.fd(); }
  void clear_wake() { wake_.clear(); }

 private:
  void run();
  void ask_once();  // this thread only
  void publish(const HeldCards& held);

  const Options options_;
  const Lister list_;
  const Reader read_;
  WakeEvent wake_;

  mutable std::mutex mutex_;
  // The thread waits on it for a stop or an ask; fresh() for the ask's answer.
  std::condition_variable changed_;
  bool stopping_ = false;  // guarded by mutex_
  Snapshot snapshot_;      // guarded by mutex_
  // fresh()'s asks, counted: the thread has answered every ask up to `asks_answered_` (an ask
  // made while a List runs waits for the next List, which starts after it).
  std::uint64_t asks_made_ = 0;      // guarded by mutex_
  std::uint64_t asks_answered_ = 0;  // guarded by mutex_

  // This thread's own: what it last logged, so each state is logged once.
  enum class Reach { unknown, answering, no_socket, failing };
  Reach reach_ = Reach::unknown;
  std::vector<std::string> last_ignored_;

  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace shim
