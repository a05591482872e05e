// Checks of internal invariants that stay on in every build type.
//
//   TESSERA_CHECK(a.dtype() == b.dtype()) << "operands " << a.dtype().to_string() << " and ...";
//
// A failed check prints "file:line: check failed: COND: message" to stderr
// and aborts. It is for broken invariants of the compiler's own data (an IR
// node built with operands that cannot go together), never for what a user,
// a file or the network can cause: those return a Status.
//
// The condition is evaluated once; the message is only built on failure.
// Header-only, standard library only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace tessera::check_detail {

/// Collects the message of a failed check and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition;
  }
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure() {
    const std::string text = stream_.str();
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
    std::abort();
  }

  /// Appends to the message; the first piece is preceded by ": ".
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    if (!has_message_) stream_ << ": ";
    has_message_ = true;
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
  bool has_message_ = false;
};

/// Turns the failure (with or without a streamed message) into void, so that the
/// macro below is one expression of type void on both branches.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace tessera::check_detail

/// Aborts with file:line, the condition and the streamed message when `cond`
/// is false; in Release builds as well as Debug ones.
#define TESSERA_CHECK(cond)                      \
  (__builtin_expect(static_cast<bool>(cond), 1)) \
      ? (void)0                                  \
      : ::tessera::check_detail::Voidify() & ::tessera::check_detail::CheckFailure(__FILE__, __LINE__, #cond)
