// How much a GetMetrics call costs a client, against the cheapest possible round trip to the same
// daemon (org.freedesktop.DBus.Peer.Ping) as the baseline, for 8 and 64 simulated cards. Also
// reports xpud's resident memory. Run: build/tests/xpud/bench/xpud_dbus_bench
#include <benchmark/benchmark.h>

#include <sdbus-c++/sdbus-c++.h>
#include <fstream>
#include <map>
#include <memory>

#include "common/names.h"
#include "common/xpud_client.h"
#include "tests/support/child_process.h"
#include "tests/support/private_bus.h"
#include "tests/support/wait.h"

namespace {

using namespace std::chrono_literals;

// One xpud per card count, started on first use and kept for the whole run.
struct Daemon {
  xpu::test::TempDir dir;
  xpu::test::PrivateBus bus;
  std::unique_ptr<xpu::test::ChildProcess> xpud;

  explicit Daemon(unsigned cards) {
    xpu::test::write_file(dir.path() / "xpud.conf", "[daemon]\nbackend = sim\n[sim]\ndevices = " +
                                                        std::to_string(cards) + "\n");
    xpud = std::make_unique<xpu::test::ChildProcess>(
        std::vector<std::string>{xpu::test::binary_path("xpud/xpud").string(), "--bus-address",
                                 bus.address(), "--config", (dir.path() / "xpud.conf").string()},
        dir.path() / "xpud.log");
    xpu::XpudClient client(xpu::ClientOptions{bus.address(), 2s});
    if (!xpu::test::wait_until([&] { return client.list_devices().ok(); }, 10s))
      throw std::runtime_error("xpud did not start: " + xpud->output());
  }

  long rss_kib() const {
    std::ifstream status("/proc/" + std::to_string(xpud->pid()) + "/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
  }
};

Daemon& daemon_for(unsigned cards) {
  static std::map<unsigned, std::unique_ptr<Daemon>> daemons;  // benchmark-binary lifetime only
  auto& slot = daemons[cards];
  if (!slot) slot = std::make_unique<Daemon>(cards);
  return *slot;
}

void BM_PingBaseline(benchmark::State& state) {
  Daemon& daemon = daemon_for(static_cast<unsigned>(state.range(0)));
  auto connection = sdbus::createSessionBusConnectionWithAddress(daemon.bus.address());
  auto proxy = sdbus::createProxy(*connection, std::string(xpu::names::kBusName),
                                  std::string(xpu::names::kManagerPath));
  for (auto _ : state) proxy->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
}

void BM_GetMetrics(benchmark::State& state) {
  Daemon& daemon = daemon_for(static_cast<unsigned>(state.range(0)));
  xpu::XpudClient client(xpu::ClientOptions{daemon.bus.address(), 2s});
  size_t devices = 0;
  for (auto _ : state) {
    auto snapshot = client.get_metrics();
    if (!snapshot) {
      state.SkipWithError(snapshot.error().c_str());
      return;
    }
    devices = snapshot->devices.size();
  }
  state.counters["devices"] = static_cast<double>(devices);
  state.counters["xpud_rss_kib"] = static_cast<double>(daemon.rss_kib());
}

void BM_ListDevices(benchmark::State& state) {
  Daemon& daemon = daemon_for(static_cast<unsigned>(state.range(0)));
  xpu::XpudClient client(xpu::ClientOptions{daemon.bus.address(), 2s});
  for (auto _ : state) benchmark::DoNotOptimize(client.list_devices());
}

BENCHMARK(BM_PingBaseline)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GetMetrics)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ListDevices)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
