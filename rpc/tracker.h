// The tracker: the one place clients and workers meet. It keeps a queue per
// device key (priorities, fair share between sessions), hands each worker one
// job at a time (or as many as it registered for), notices dead workers by
// their missing heartbeats and requeues their jobs, and delivers exactly one
// result per job to the client that submitted it (docs/protocol.md).
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>

#include "base/status.h"
#include "rpc/keys.h"
#include "rpc/log.h"
#include "rpc/wire.h"

namespace tessera::rpc {

/// How a tracker listens and when it gives up on workers.
struct TrackerOptions {
  std::string bind = "tcp://127.0.0.1:9190";
  /// CURVE: `security.own` is the tracker's keypair; `authorized` lists the
  /// public keys of the clients and workers it admits, with their roles: a
  /// client key may not register as a worker, a worker key may not submit
  /// (keys.h KeyRole). Or security.insecure (plaintext; only ipc:// and
  /// loopback binds; no roles: the peers are this machine's).
  SecurityOptions security;
  AuthorizedKeys authorized;
  int heartbeat_ms = 1000;        ///< the interval workers are told to use
  int dead_after_ms = 3000;       ///< silence after which a worker is dead
  int no_worker_grace_ms = 2000;  ///< how long a job waits for a worker of its key
  /// A client that waits for jobs syncs every 500 ms: a session silent this
  /// long has gone (killed, cut off), and its jobs that are not done are
  /// dropped rather than measured for no one.
  int client_gone_after_ms = 30000;
  size_t max_queued_jobs = 100000;
  int64_t max_queued_bytes = 8LL << 30;  ///< library + reference bytes held for queued and running jobs
  WireLimits limits;
  bool log = false;  ///< one line per event on stderr (at least LogLevel::kInfo)
  /// What the tracker logs on stderr (rpc/log.h): refused keys, dead
  /// workers and jobs failed for want of one at kWarn; registrations,
  /// requeues and its start at kInfo.
  LogLevel log_level = LogLevel::kOff;
};

/// A tracker. bind() then run() on one thread; everything else is messages.
class Tracker {
 public:
  explicit Tracker(TrackerOptions options);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  /// Starts the key check (CURVE) and binds. Errors: kInvalidArgument
  /// (plaintext on a non-loopback bind, no keys), kIOError (bind failed).
  Status bind();
  /// The bound endpoint (tcp://127.0.0.1:* resolved to its port).
  std::string endpoint() const;
  /// Serves until `stop` becomes true. Requires bind().
  Status run(const std::atomic<bool>& stop);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::rpc
