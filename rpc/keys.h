// CURVE keys on disk and the ZAP handler that admits only known public keys.
//
// A keypair NAME is two files: NAME.key (public and secret key; the secret one
// stays on its machine) and NAME.pub (the public key, handed to the other side).
// Both are written with mode 0600 in a directory of mode 0700.
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "base/status.h"
#include "rpc/log.h"
#include "rpc/wire.h"

namespace tessera::rpc {

/// What an authorized key may do at the tracker. kWorker keys register and
/// return results; kClient keys submit jobs and ask for the farm status;
/// kAny is a key authorized before roles existed (both, with a warning).
enum class KeyRole { kAny, kWorker, kClient };

/// A fresh CURVE keypair from libsodium (zmq_curve_keypair); kIOError when
/// libzmq was built without CURVE.
Result<CurveKeyPair> generate_keypair();

/// Writes DIR/NAME.key and DIR/NAME.pub (mode 0600; DIR created with 0700),
/// both with a "role = ..." line unless `role` is kAny. Refuses
/// (kInvalidArgument) to overwrite an existing key.
Status write_keypair(const std::string& dir, const std::string& name, const CurveKeyPair& keys,
                     KeyRole role = KeyRole::kAny);

/// Reads a NAME.key file ("public-key = ..." and "secret-key = ..." lines).
/// Errors: kNotFound, kParseError (naming the file), kInvalidArgument when the
/// file is readable by others (a secret key must be private).
Result<CurveKeyPair> load_keypair(const std::string& path);

/// The public key in a .pub or .key file, or a bare 40-character Z85 string.
Result<std::string> load_public_key(const std::string& path_or_key);

/// "any", "worker" or "client".
const char* key_role_name(KeyRole role);
/// Parses "worker" or "client" (kInvalidArgument otherwise; "any" is never written).
Result<KeyRole> parse_key_role(const std::string& name);

/// Authorized public keys (Z85) and their roles.
using AuthorizedKeys = std::map<std::string, KeyRole>;

/// The role a key file declares in a "role = worker|client" line; kAny when
/// it has none (a key generated before roles existed).
Result<KeyRole> load_key_role(const std::string& path);

/// The authorized public keys and their roles. A directory: *.pub files in
/// `workers/` are worker keys, in `clients/` client keys; a *.pub file
/// directly in the directory has the role its "role =" line names, or kAny
/// without one. A file: one key a line, "worker = KEY", "client = KEY", or a
/// bare KEY / "public-key = KEY" (kAny); '#' starts a comment. A key listed
/// under two different roles is an error, and so is a .pub file whose role
/// line contradicts its folder. Errors name the file and line.
Result<AuthorizedKeys> load_authorized_keys(const std::string& path);

/// How the ZAP handler tells the tracker who a peer is: the ZAP user id
/// "ROLE:KEY" (role name, then the peer's Z85 public key), which libzmq
/// attaches to every message of that peer as its "User-Id" property.
struct PeerIdentity {
  KeyRole role = KeyRole::kAny;
  std::string public_key;  ///< empty on a plaintext (--insecure) connection
};
/// Parses a ZAP user id as set by ZapHandler; an empty id (plaintext) is kAny
/// with no key.
PeerIdentity parse_peer_identity(const std::string& user_id);

/// The one-line warning every process run with --insecure prints on stderr:
/// "PROGRAM: warning: --insecure: ..." (plaintext, no keys, no roles). Not
/// for an ipc:// socket in a directory of mode 0700 owned by this user (the
/// file system admits no one else: LocalRunner's private farm).
void warn_insecure(const char* program, const std::string& endpoint);

/// ZeroMQ's authentication protocol (RFC 27) for one context: admits a CURVE
/// peer only when its public key is in `authorized`, and names it by the user
/// id "ROLE:KEY" (PeerIdentity). Runs a thread bound to
/// inproc://zeromq.zap.01 until destroyed. One per context (libzmq's rule).
class ZapHandler {
 public:
  /// `log` (may be null) gets a warning per refused key.
  ZapHandler(void* ctx, AuthorizedKeys authorized, Log* log = nullptr);
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
  AuthorizedKeys authorized_;
  Log* log_;
  Socket socket_;
  Status status_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

}  // namespace tessera::rpc
