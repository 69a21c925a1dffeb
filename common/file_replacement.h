// Keeping one file in a directory equal to some content, for files that other programs read at
// any moment (xpud's CDI spec, read by container runtimes; the device plugin's feature file, read
// by node-feature-discovery).
//
// The file is never written in place: a temp file (`.<name>.tmp`, a dot file, which both readers
// skip) is written in the same directory and renamed over it, so a reader finds the whole old or
// the whole new content. Before that the file on disk is read back, and left alone when it
// already holds exactly the content: an unchanged file keeps its inode and mtime, across
// restarts too. The directory may be a symlink (it is followed: /var/run is one); the file and
// the temp file never are (O_NOFOLLOW, and rename replaces a symlink rather than writing through
// it); anything else planted under the name (a FIFO, a device node) is replaced unopened.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"

namespace xpu {

struct FileReplacement {
  mode_t mode = 0644;    // set explicitly: the create mode goes through the umask
  bool durable = false;  // fsync the file before the rename and the directory after it
};

// Makes `directory`/`name` hold exactly `content`. True when it was (re)written, false when it
// already held that; an error names the path and the step that failed.
Result<bool> replace_file_if_changed(const std::filesystem::path& directory,
                                     const std::string& name, std::string_view content,
                                     FileReplacement how = {});

// Removes `directory`/`name` and a temp file a crash left behind. True when the file was there.
Result<bool> remove_replaced_file(const std::filesystem::path& directory, const std::string& name);

}  // namespace xpu
