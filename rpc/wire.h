// The transport under every rpc/ component: ZeroMQ sockets set up with CURVE
// (or plaintext on loopback/ipc only), one serialized Envelope per frame, size
// limits, and the validation every frame passes before anyone acts on it.
//
// The C API of libzmq is used directly (not cppzmq's exceptions): network
// input must produce error values, never throw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "rpc/measure_types.h"
#include "rpc/tessera.pb.h"

namespace tessera::rpc {

/// The protocol version this build speaks; envelopes with another are dropped.
inline constexpr uint32_t kProtocolVersion = 1;

/// Bounds on what a peer accepts from the network. A frame or field beyond
/// them is dropped and counted, never trusted.
struct WireLimits {
  int64_t max_library_bytes = 256LL << 20;    ///< a kernel library
  int64_t max_reference_bytes = 256LL << 20;  ///< expected output of a reference check
  int max_reference_points = 1 << 20;         ///< sampled points of a reference check
  int64_t max_arg_bytes = 1LL << 30;          ///< one argument buffer on the worker
  int max_args = 64;
  int max_rank = 8;
  int max_number = 1 << 24;
  int max_repeat = 100000;
  uint32_t max_timeout_ms = 3600u * 1000u;
  int max_packages = 8;  ///< packages of one package-timing job
  /// All the packages of one package-timing job: what a frame holds.
  int64_t max_package_bytes() const { return max_library_bytes + max_reference_bytes; }
  /// Largest frame a socket accepts (ZMQ_MAXMSGSIZE): a job plus headroom.
  int64_t max_frame_bytes() const { return max_library_bytes + max_reference_bytes + (1 << 20); }
};

/// A CURVE keypair in Z85 (40 characters each).
struct CurveKeyPair {
  std::string public_z85;
  std::string secret_z85;
};

/// How a socket authenticates. Either `insecure` (plaintext; only for ipc://
/// and loopback endpoints), or CURVE with `own` keys; a connecting peer also
/// names the tracker's public key in `server_public_z85`.
struct SecurityOptions {
  bool insecure = false;
  CurveKeyPair own;
  std::string server_public_z85;
};

/// Ok when plaintext is acceptable on `endpoint`: ipc://, inproc://, or tcp://
/// on a loopback address (127.0.0.0/8, [::1]) or a name that resolves only to
/// loopback addresses (localhost); judged by address, never by the name's
/// spelling. kInvalidArgument otherwise, saying why.
Status check_insecure_endpoint(const std::string& endpoint);

/// Whether `endpoint` is well formed (a tcp:// port of 1-65535, or `*`):
/// what bind and connect check before ZeroMQ sees it.
bool is_well_formed_endpoint(const std::string& endpoint);

/// An owning ZeroMQ context (zmq_ctx_new / zmq_ctx_term).
class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// The raw context for zmq_socket; null only if libzmq could not allocate one.
  void* get() const { return ctx_; }

 private:
  void* ctx_;
};

/// An owning ZeroMQ socket, closed with linger 0 (queued frames are dropped:
/// the protocol re-sends what matters).
class Socket {
 public:
  Socket() = default;
  /// A socket of `type` (ZMQ_ROUTER, ZMQ_DEALER) with `frame limit` bytes max
  /// per frame; kIOError when libzmq refuses.
  static Result<Socket> create(void* ctx, int type, int64_t max_frame_bytes);
  ~Socket();
  Socket(Socket&& other) noexcept : s_(other.s_) { other.s_ = nullptr; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  /// The raw socket for zmq_poll / zmq_send; null for a default-constructed Socket.
  void* get() const { return s_; }
  /// True once created.
  explicit operator bool() const { return s_ != nullptr; }
  /// zmq_setsockopt with an error that names the option.
  Status set(int option, const void* value, size_t size, const char* name);
  /// zmq_setsockopt of an int option.
  Status set_int(int option, int value, const char* name) { return set(option, &value, sizeof value, name); }
  /// zmq_bind; kIOError naming the endpoint when it fails (address in use, bad path).
  Status bind(const std::string& endpoint);
  /// zmq_connect (asynchronous: the peer need not be up yet); kIOError for a malformed endpoint.
  Status connect(const std::string& endpoint);
  /// The endpoint actually bound (resolves tcp://...:* to a port).
  std::string last_endpoint() const;

 private:
  void* s_ = nullptr;
};

/// Makes `socket` a CURVE server (the tracker), or plaintext when insecure.
Status apply_server_security(Socket& socket, const SecurityOptions& security);
/// Makes `socket` a CURVE client of the server key, or plaintext when insecure.
Status apply_client_security(Socket& socket, const SecurityOptions& security);

/// Sends `envelope` (with protocol_version set) as one frame, prefixed by a
/// routing frame when `routing` is not empty (ROUTER sockets). Never blocks:
/// kUnavailable when the peer's queue is full or unknown.
Status send_envelope(Socket& socket, pb::Envelope envelope, const std::string& routing = "");

/// One received message: its frames (at most a few; more are counted as malformed).
struct Message {
  std::vector<std::string> frames;
  bool truncated = false;  ///< had more frames than kept
  /// The ZAP user id of the peer that sent it ("ROLE:KEY", keys.h
  /// PeerIdentity); empty on plaintext connections.
  std::string user_id;
};

/// Receives one whole message without blocking; kUnavailable when none is waiting.
Result<Message> recv_message(Socket& socket, size_t max_frames = 3);

/// Parses one frame into an Envelope of this protocol version; false when the
/// bytes are not an envelope, the version differs, or no body is set.
bool parse_envelope(const std::string& frame, pb::Envelope* out);

/// Checks every field of a job a client submitted or a tracker dispatched.
Status validate_job(const pb::Job& job, const WireLimits& limits);
/// Checks a worker's or tracker's result (ids, enum range, costs finite).
Status validate_result(const pb::Result& result);
/// Checks a registration: ids, key and target are printable and bounded.
Status validate_register(const pb::Register& reg);
/// A session id, worker id or device key: 1-128 of [A-Za-z0-9._:@+-].
bool is_valid_name(const std::string& name);
/// `text` (a name, a key, a path a user gave) as an error message quotes
/// it: in single quotes, bytes that are not printable as '?', and one
/// longer than 64 bytes cut to its first 40 with its length, so that a
/// 10 MB argument is not echoed whole.
std::string quoted(const std::string& text);

/// Bytes of one argument: product of the shape times the dtype's storage size,
/// or -1 on overflow / negative extents.
int64_t arg_nbytes(const std::vector<int64_t>& shape, DType dtype);

/// The capability a worker registers when it takes package-timing jobs.
inline constexpr const char* kTimesPackages = "times-packages";

/// MeasureInput -> wire Job (ids and key filled by the caller).
pb::Job to_wire_job(const MeasureInput& input);
/// Wire Result -> MeasureResult.
MeasureResult from_wire_result(const pb::Result& result);
/// A Result for `job` with an error and no costs.
pb::Result error_result(const pb::Job& job, pb::ErrorKind kind, const std::string& message,
                        const std::string& worker_id = "");

/// Random lowercase hex of `bytes` random bytes (getrandom), for ids.
std::string random_hex(size_t bytes);

}  // namespace tessera::rpc
