// The daemons' log (tracker, worker): lines on stderr with a timestamp, a
// level and the daemon's name, through spdlog. A Log is an object its daemon
// owns, never a global: two trackers in one test process log apart.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "base/status.h"

namespace spdlog {
class logger;
}

namespace tessera::rpc {

/// How much a daemon says, least first. kOff: nothing.
enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

/// "debug", "info", "warn", "error" or "off"; a user error naming them otherwise.
Result<LogLevel> parse_log_level(const std::string& text);

/// One daemon's log on stderr: "2026-11-24 14:05:09.123 [warn] tracker: TEXT".
/// Thread-safe (the tracker's key handler logs from its own thread).
class Log {
 public:
  /// `name` heads every line; lines below `level` are dropped.
  Log(const std::string& name, LogLevel level);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  /// True when a line of `level` would be written.
  bool enabled(LogLevel level) const;
  void write(LogLevel level, const std::string& text);

  /// printf-style lines of each level.
  template <typename... A>
  void debug(const char* fmt, A... args) {
    format(LogLevel::kDebug, fmt, args...);
  }
  template <typename... A>
  void info(const char* fmt, A... args) {
    format(LogLevel::kInfo, fmt, args...);
  }
  template <typename... A>
  void warn(const char* fmt, A... args) {
    format(LogLevel::kWarn, fmt, args...);
  }
  template <typename... A>
  void error(const char* fmt, A... args) {
    format(LogLevel::kError, fmt, args...);
  }

 private:
  template <typename... A>
  void format(LogLevel level, const char* fmt, A... args) {
    if (!enabled(level)) return;
    char buf[1024];
    if constexpr (sizeof...(A) == 0) {
      write(level, fmt);
    } else {
      std::snprintf(buf, sizeof buf, fmt, args...);
      write(level, buf);
    }
  }

  LogLevel level_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace tessera::rpc
