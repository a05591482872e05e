// Why a connection to the tracker does not come up. ZeroMQ retries a failed
// CURVE handshake forever and silently; a HandshakeWatch reads the socket's
// monitor events and says which side's key is wrong, so that a client fails
// with that reason and a worker stops after a few tries instead of waiting.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "rpc/wire.h"

namespace tessera::rpc {

/// Handshakes that may fail in a row before a worker gives up...
inline constexpr int kMaxHandshakeFailures = 5;
/// ...or how long it may go on failing (libzmq does not always retry a
/// handshake the tracker refused).
inline constexpr int kMaxHandshakeFailingMs = 3000;

/// A monitor on one socket connected to the tracker.
class HandshakeWatch {
 public:
  HandshakeWatch() = default;
  /// Starts monitoring `socket` (before it connects). `who` names this side
  /// in messages ("client", "worker"). kIOError when libzmq refuses.
  static Result<HandshakeWatch> attach(void* ctx, Socket& socket, const std::string& endpoint,
                                       const SecurityOptions& security, const std::string& who);
  ~HandshakeWatch();
  HandshakeWatch(HandshakeWatch&&) = default;
  HandshakeWatch& operator=(HandshakeWatch&&) = default;

  /// Reads the pending events without blocking.
  void read();
  /// The monitor socket, for zmq_poll.
  void* socket() const { return monitor_.get(); }
  /// Failed handshakes since the last one that succeeded.
  int failures() const { return failures_; }
  /// True after kMaxHandshakeFailures failures in a row, or failures for
  /// kMaxHandshakeFailingMs without a success: time to give up.
  bool hopeless() const {
    return failures_ >= kMaxHandshakeFailures ||
           (failures_ > 0 &&
            std::chrono::steady_clock::now() - first_failure_ >= std::chrono::milliseconds(kMaxHandshakeFailingMs));
  }
  /// Ok, or why the last handshake failed (which key is wrong, and what to do).
  const Status& status() const { return status_; }

 private:
  Status explain(int event, uint32_t value) const;

  void* watched_ = nullptr;
  Socket monitor_;
  std::string endpoint_, who_;
  SecurityOptions security_;
  bool handshaking_ = false;
  int failures_ = 0;
  std::chrono::steady_clock::time_point first_failure_;
  Status status_;
};

}  // namespace tessera::rpc
