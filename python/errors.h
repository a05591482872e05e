// How Tessera's errors reach Python: a Status becomes tessera.Error (a
// RuntimeError whose `code` is the error code's name, "not-found"), with
// Tessera's message as it is.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>

#include "base/status.h"

namespace tessera::python {

/// A Status on its way to Python: translated to tessera.Error.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}
  /// The Status it carries (never ok).
  const Status& status() const { return status_; }

 private:
  Status status_;
};

/// Throws StatusError unless `status` is ok.
inline void check(const Status& status) {
  if (!status.is_ok()) throw StatusError(status);
}

/// The value of `result`, or StatusError.
template <typename T>
T take(Result<T> result) {
  check(result.status());
  return std::move(result).value();
}

/// Adds tessera.Error to `m` and translates StatusError into it.
void register_errors(pybind11::module_& m);

}  // namespace tessera::python
