// CURVE keys on disk and the ZAP handler that admits only known public keys.
//
// A keypair NAME is two files: NAME.key (public and secret key; the secret one
// stays on its machine) and NAME.pub (the public key, handed to the other side).
// Both are written with mode 0600 in a directory of mode 0700.
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include "rpc/log.h"
#include "rpc/wire.h"
#include "base/status.h"

namespace tessera::rpc {

/// A fresh CURVE keypair from libsodium (zmq_curve_keypair); kIOError when
/// libzmq was built without CURVE.
Result<CurveKeyPair> generate_keypair();

/// Writes DIR/NAME.key and DIR/NAME.pub (mode 0600; DIR created with 0700).
/// Refuses (kInvalidArgument) to overwrite an existing key.
Status write_keypair(const std::string& dir, const std::string& name, const CurveKeyPair& keys);

/// Reads a NAME.key file ("public-key = ..." and "secret-key = ..." lines).
/// Errors: kNotFound, kParseError (naming the file), kInvalidArgument when the
/// file is readable by others (a secret key must be private).
Result<CurveKeyPair> load_keypair(const std::string& path);

/// The public key in a .pub or .key file, or a bare 40-character Z85 string.
Result<std::string> load_public_key(const std::string& path_or_key);

/// The authorized public keys: every *.pub file of a directory, or every key
/// line of one file (comments start with '#'). Errors name the file and line.
Result<std::set<std::string>> load_authorized_keys(const std::string& path);

/// ZeroMQ's authentication protocol (RFC 27) for one context: admits a CURVE
/// peer only when its public key is in `authorized`. Runs a thread bound to
/// inproc://zeromq.zap.01 until destroyed. One per context (libzmq's rule).
class ZapHandler {
 public:
  /// `log` (may be null) gets a warning per refused key.
  ZapHandler(void* ctx, std::set<std::string> authorized_z85, Log* log = nullptr);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  /// Ok once the handler's socket is bound; otherwise why not.
  const Status& status() const { return status_; }
  /// Connections refused so far.
  uint64_t refused() const { return refused_.load(); }

 private:
  void loop();

  void* ctx_;
  std::set<std::string> authorized_;
  Log* log_;
  Socket socket_;
  Status status_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

}  // namespace tessera::rpc
