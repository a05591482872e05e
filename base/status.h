// Errors as values: the vocabulary every Tessera module uses at its boundaries.
//
// Header-only and libc++-only so that runtime/ (which must cross-build for
// boards without LLVM) and every other folder can share it.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace tessera {

/// What went wrong, coarse enough to test against and to store in a record.
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  ///< bad user input: a command line, an operator spec, a step
  kInvalidSchedule,  ///< a step that does not apply to the schedule state
  kLoweringError,    ///< a schedule that cannot be lowered to loop IR
  kCodegenError,     ///< LLVM or the linker refused
  kTargetError,      ///< a target string that does not parse or names an unknown CPU
  kNotFound,         ///< a file, a symbol, a record
  kIOError,          ///< the operating system said no
  kParseError,       ///< a file or frame with the wrong shape
  kRuntimeError,     ///< a kernel returned a non-zero status
  kTimeout,
  kUnavailable,  ///< a peer (tracker, worker, database) is not there
  kDatabaseError,
  kInternal,
};

/// The printable name of an error code, e.g. "invalid-schedule".
inline const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kInvalidSchedule: return "invalid-schedule";
    case ErrorCode::kLoweringError: return "lowering-error";
    case ErrorCode::kCodegenError: return "codegen-error";
    case ErrorCode::kTargetError: return "target-error";
    case ErrorCode::kNotFound: return "not-found";
    case ErrorCode::kIOError: return "io-error";
    case ErrorCode::kParseError: return "parse-error";
    case ErrorCode::kRuntimeError: return "runtime-error";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kDatabaseError: return "database-error";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

/// Success, or an error code with a message that says what and where.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid-schedule: split of stage C: factor 0 ..."
  std::string to_string() const { return is_ok() ? "ok" : std::string(error_code_name(code_)) + ": " + message_; }
  /// The same error with `context` in front of the message ("while X: ...").
  Status with_context(const std::string& context) const {
    return is_ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

/// A value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    TESSERA_CHECK(!std::get<Status>(v_).is_ok()) << "a Result built from an ok Status";
  }

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & {
    check_ok();
    return std::get<T>(v_);
  }
  const T& value() const& {
    check_ok();
    return std::get<T>(v_);
  }
  T&& value() && {
    check_ok();
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  // The value of an error is a broken invariant of the caller: say which error.
  void check_ok() const {
    TESSERA_CHECK(is_ok()) << "value() of a Result holding an error: " << std::get<Status>(v_).to_string();
  }

  std::variant<T, Status> v_;
};

}  // namespace tessera

/// Returns early with the error of a Status-returning expression.
#define TESSERA_RETURN_IF_ERROR(expr) \
  do {                                \
    ::tessera::Status _st = (expr);   \
    if (!_st.is_ok()) return _st;     \
  } while (0)

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)
/// `TESSERA_ASSIGN_OR_RETURN(auto x, f());` binds the value or returns the error.
#define TESSERA_ASSIGN_OR_RETURN(lhs, expr) TESSERA_ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(_res_, __LINE__), lhs, expr)
#define TESSERA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.is_ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
