#include "rpc/temp_dirs.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tessera::rpc {

Result<std::string> make_owned_dir(const std::string& base, const std::string& prefix) {
  std::string path = base + "/" + prefix + "-" + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(path.data()))
    return Status(ErrorCode::kIOError, "cannot create a private directory in " + base + ": " + std::strerror(errno));
  ::chmod(path.c_str(), 0700);
  return path;
}

void remove_tree(const std::string& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) return;
  if (S_ISDIR(info.st_mode)) {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
      ::closedir(d);
    }
    for (const auto& name : names) remove_tree(path + "/" + name);
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

int remove_stale_dirs(const std::string& base, const std::string& prefix) {
  const std::string head = prefix + "-";
  std::vector<std::string> stale;
  DIR* d = ::opendir(base.c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, head.size(), head) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + head.size(), &end, 10);
    if (pid <= 0 || !end || *end != '-') continue;
    struct stat info;
    const std::string path = base + "/" + name;
    if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to tell)
    stale.push_back(path);
  }
  ::closedir(d);
  for (const auto& path : stale) remove_tree(path);
  return static_cast<int>(stale.size());
}

}  // namespace tessera::rpc
