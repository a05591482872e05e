// Private temporary directories that say who owns them: PREFIX-PID-XXXXXX.
// A process removes its own when it ends; one killed with -9 cannot, so the
// next process of the kind removes those whose owner is dead when it starts.
#pragma once

#include <string>

#include "base/status.h"

namespace tessera::rpc {

/// Creates BASE/PREFIX-PID-XXXXXX (mode 0700) for this process; its path.
Result<std::string> make_owned_dir(const std::string& base, const std::string& prefix);

/// Removes `path` and everything under it (no symlink is followed).
void remove_tree(const std::string& path);

/// Removes every BASE/PREFIX-PID-* directory of this user whose PID is not a
/// live process; returns how many. Directories of live processes, of other
/// users, and names without a PID are left alone.
int remove_stale_dirs(const std::string& base, const std::string& prefix);

}  // namespace tessera::rpc
