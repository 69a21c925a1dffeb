// Logging set-up shared by every binary: the journal when systemd connected stderr to it,
// otherwise one structured line per event on stderr.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace xpu {

// Parses error|warn|info|debug|trace (and "warning"); nullopt for anything else.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

// Maps klog-style verbosity (--v N) to a level: 0-1 warn, 2-3 info, 4 debug, 5+ trace.
spdlog::level::level_enum level_from_verbosity(int verbosity);

enum class LogTarget { Auto, Journal, Stderr };

// Installs the default logger. Auto picks the journal when $JOURNAL_STREAM names our stderr.
void setup_logging(std::string_view program, spdlog::level::level_enum level,
                   LogTarget target = LogTarget::Auto);

bool logging_to_journal();

// A log line about one device, with the device in structured journal fields
// (XPU_DEVICE=xpu3, XPU_UUID=...) so `journalctl XPU_DEVICE=xpu3` finds it.
void log_device_event(spdlog::level::level_enum level, std::string_view device,
                      std::string_view uuid, std::string_view message);

}  // namespace xpu
