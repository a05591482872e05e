// The client side of the protocol: a session that submits jobs to a tracker
// and collects their results. It keeps every outstanding job (library bytes
// included) until its result arrives, and reconciles with the tracker every
// `sync_ms`: jobs the tracker does not know (it restarted, or a frame was
// lost) are submitted again; results it already has are sent again.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "rpc/handshake.h"
#include "rpc/measure_types.h"
#include "rpc/wire.h"

namespace tessera::rpc {

/// Where the tracker is and who we are.
struct ClientOptions {
  std::string tracker;  ///< endpoint
  SecurityOptions security;
  std::string session_id;  ///< empty: a random one (fair share is per session)
  int sync_ms = 500;
  WireLimits limits;
};

/// One client session. Not thread-safe: one thread submits and polls.
class RpcClient {
 public:
  /// Connects (asynchronously: ZeroMQ retries in the background). Errors:
  /// kInvalidArgument (bad keys, plaintext on a non-loopback endpoint), kIOError.
  static Result<std::unique_ptr<RpcClient>> connect(ClientOptions options);
  ~RpcClient();

  /// Queues `input` for workers of `device_key`; returns its job id.
  uint64_t submit(const MeasureInput& input, const std::string& device_key);
  /// Waits up to `timeout_ms` for results; each job's result is returned once.
  std::vector<std::pair<uint64_t, MeasureResult>> poll(int timeout_ms);
  /// Gives up on jobs (e.g. past their deadline): the tracker drops them.
  void cancel(const std::vector<uint64_t>& job_ids);
  /// Jobs submitted whose result has not been returned by poll().
  size_t outstanding() const { return outstanding_.size(); }
  /// Not ok once the tracker refused our key (CURVE authentication failed,
  /// saying which side's key is wrong) or our key's role (Refused).
  const Status& auth_status() const { return auth_status_; }
  const std::string& session_id() const { return options_.session_id; }
  /// When the tracker was last heard from (any message: a result, a sync
  /// reply), or when this client connected. While jobs are outstanding the
  /// client syncs every sync_ms and a live tracker answers each sync.
  std::chrono::steady_clock::time_point last_heard() const { return last_heard_; }

 private:
  explicit RpcClient(ClientOptions options);
  Status open();
  void sync();
  void read_monitor();

  ClientOptions options_;
  Context ctx_;
  Socket socket_;
  HandshakeWatch watch_;  // after socket_: destroyed first, while the socket still exists
  uint64_t next_id_ = 1;
  std::map<uint64_t, pb::Job> outstanding_;
  std::chrono::steady_clock::time_point next_sync_;
  std::chrono::steady_clock::time_point last_heard_;
  Status auth_status_;
  Status refused_;  // the tracker's Refused: final
};

/// Asks the tracker at `endpoint` for its farm status; kUnavailable when no
/// answer comes within `timeout_ms` (not running, or our key was refused).
Result<pb::FarmStatus> query_farm_status(const std::string& endpoint, const SecurityOptions& security,
                                         int timeout_ms = 3000);

/// The farm status as an aligned text table (what `tessera farm status` prints).
std::string format_farm_status(const pb::FarmStatus& status);

}  // namespace tessera::rpc
