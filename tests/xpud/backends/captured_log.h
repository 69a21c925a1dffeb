// Captures what the code under test logs through spdlog's default logger, one "level message"
// line per event (every level), for as long as the object lives; the previous default logger
// comes back afterwards.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace xpud::test {

class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%l %v");
    auto logger = std::make_shared<spdlog::logger>("captured", std::move(sink));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::string text() const { return stream_.str(); }
  void clear() { stream_.str({}); }

  // Lines logged at `level` ("warning", "debug", ...) that contain `text`.
  int count(std::string_view level, std::string_view text) const {
    std::istringstream lines(stream_.str());
    std::string line;
    int found = 0;
    const std::string prefix = std::string(level) + " ";
    while (std::getline(lines, line))
      if (line.starts_with(prefix) && line.find(text) != std::string::npos) ++found;
    return found;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace xpud::test
