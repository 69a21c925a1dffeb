// One scrape: xpud's GetMetrics, the watcher's device view and the cached pod map, rendered.
#pragma once

#include <string>

#include "common/xpud_client.h"
#include "k8s-shim/exporter/pod_owners_cache.h"

namespace shim::exporter {

class Scraper {
 public:
  Scraper(xpu::XpudClient& xpud, PodOwnersCache& pods) : xpud_(xpud), pods_(pods) {}

  // Thread-safe; bounded by the xpud call timeout plus the pod-resources deadline.
  std::string scrape();

 private:
  xpu::XpudClient& xpud_;
  PodOwnersCache& pods_;
};

}  // namespace shim::exporter
