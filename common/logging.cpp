#include "common/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <systemd/sd-journal.h>

namespace xpu {
namespace {

// Set once at start-up by setup_logging (before any thread starts), read afterwards.
bool g_journal = false;

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == st.st_dev && ino == st.st_ino;
}

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

}  // namespace

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) {
  if (text == "error") return spdlog::level::err;
  if (text == "warn" || text == "warning") return spdlog::level::warn;
  if (text == "info") return spdlog::level::info;
  if (text == "debug") return spdlog::level::debug;
  if (text == "trace") return spdlog::level::trace;
  return std::nullopt;
}

spdlog::level::level_enum level_from_verbosity(int verbosity) {
  if (verbosity <= 1) return spdlog::level::warn;
  if (verbosity <= 3) return spdlog::level::info;
  if (verbosity == 4) return spdlog::level::debug;
  return spdlog::level::trace;
}

void setup_logging(std::string_view program, spdlog::level::level_enum level, LogTarget target) {
  g_journal = target == LogTarget::Journal || (target == LogTarget::Auto && stderr_is_journal());
  std::shared_ptr<spdlog::logger> logger;
  if (g_journal) {
    // The journal adds its own timestamp and identifier; send the bare message.
    auto sink = std::make_shared<spdlog::sinks::systemd_sink_mt>(std::string(program), false);
    logger = std::make_shared<spdlog::logger>(std::string(program), std::move(sink));
  } else {
    logger = std::make_shared<spdlog::logger>(std::string(program),
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    // logfmt: one event per line, key=value, easy for both people and log shippers.
    logger->set_pattern("ts=%Y-%m-%dT%H:%M:%S.%e%z level=%l prog=%n msg=\"%v\"");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

bool logging_to_journal() {
  return g_journal;
}

void log_device_event(spdlog::level::level_enum level, std::string_view device,
                      std::string_view uuid, std::string_view message) {
  if (!spdlog::should_log(level)) return;
  if (g_journal) {
    sd_journal_send("MESSAGE=%s: %.*s", std::string(device).c_str(),
                    static_cast<int>(message.size()), message.data(), "PRIORITY=%d",
                    syslog_priority(level), "XPU_DEVICE=%.*s", static_cast<int>(device.size()),
                    device.data(), "XPU_UUID=%.*s", static_cast<int>(uuid.size()), uuid.data(),
                    "SYSLOG_IDENTIFIER=%s", spdlog::default_logger()->name().c_str(), nullptr);
    return;
  }
  spdlog::log(level, "{}: {} (device={} uuid={})", device, message, device, uuid);
}

}  // namespace xpu
