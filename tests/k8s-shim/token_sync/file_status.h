// lstat() for assertions: what a user of the destination directory would see.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace shim::token_sync::testing {

inline struct stat lstat_or_throw(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw std::runtime_error("lstat " + path.string() + " failed");
  return st;
}

inline unsigned mode_bits(const std::filesystem::path& path) {
  return lstat_or_throw(path).st_mode & 07777;
}

}  // namespace shim::token_sync::testing
