// One write to a sysfs attribute: an existing regular file, opened without creating it or
// following a link, the whole text in one write (sysfs takes a store in one call).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace xpud::sysfs {

struct WriteFailure {
  int error = 0;        // the errno, 0 when the file was not what it should be
  std::string message;  // names the file and what went wrong
};

std::optional<WriteFailure> write_attribute(const std::filesystem::path& file,
                                            std::string_view text);

}  // namespace xpud::sysfs
