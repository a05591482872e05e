// spdlog (and the fmt it uses) header-only, in this file alone: nothing to
// link, so the worker still cross-builds for boards from the headers.
#define SPDLOG_HEADER_ONLY
#define FMT_HEADER_ONLY
#include "rpc/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace tessera::rpc {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::off;
}

}  // namespace

Result<LogLevel> parse_log_level(const std::string& text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  if (text == "off") return LogLevel::kOff;
  return Status(ErrorCode::kInvalidArgument, "--log-level must be debug, info, warn, error or off, not '" + text + "'");
}

Log::Log(const std::string& name, LogLevel level)
    : level_(level),
      // Not registered with spdlog's registry: this object is the only owner.
      logger_(std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>())) {
  logger_->set_pattern("%Y-%m-%d %H:%M:%S.%e [%l] %n: %v");
  logger_->set_level(to_spdlog(level));
  logger_->flush_on(spdlog::level::debug);  // a daemon's line is read while it runs
}

Log::~Log() = default;

bool Log::enabled(LogLevel level) const {
  return level != LogLevel::kOff && level >= level_;
}

void Log::write(LogLevel level, const std::string& text) {
  if (enabled(level)) logger_->log(to_spdlog(level), text);
}

}  // namespace tessera::rpc
