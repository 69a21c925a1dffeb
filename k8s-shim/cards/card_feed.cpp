#include "k8s-shim/cards/card_feed.h"

#include <stdexcept>

namespace shim {

CardFeed::CardFeed(xpu::ClientOptions xpud, Clock::duration grace_period, Clock::time_point start)
    : options_(std::move(xpud)), state_(grace_period, start) {}

CardFeed::Watch::~Watch() {
  // Joins the watcher's thread: no listener call is running or to come once this returns.
  if (feed_) feed_->client_.reset();
}

CardFeed::Watch CardFeed::watch(Listener on_news) {
  if (client_) throw std::logic_error("CardFeed::watch: already watching xpud");
  client_ = std::make_unique<xpu::XpudClient>(options_);
  client_->watch([this, on_news = std::move(on_news)](const xpu::DeviceView& view) {
    const auto now = Clock::now();
    state_.update(view, now);
    if (on_news) on_news(now);
    wake_.signal();
  });
  return Watch(*this);
}

xpu::Status CardFeed::configure_virtual_functions(unsigned index, unsigned count,
                                                  std::chrono::milliseconds timeout) {
  if (!client_) return xpu::Error{"not watching xpud (the role is stopping)"};
  return client_->configure_virtual_functions(index, count, timeout);
}

}  // namespace shim
