#include "rpc/wire.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/random.h>
#include <zmq.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::rpc {
namespace {

// As many threads as a worker's --threads may ask for.
constexpr uint32_t kMaxResultThreads = 4096;

Status zmq_error(const std::string& what) {
  return Status(ErrorCode::kIOError, what + ": " + zmq_strerror(zmq_errno()));
}

bool is_printable(const std::string& s, size_t max_len) {
  if (s.size() > max_len) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

bool is_symbol(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '$')) return false;
  return true;
}

// The host and port of a tcp:// endpoint ("tcp://src;dst" names the
// destination last; "[::1]" loses its brackets). False when it has no port.
bool split_tcp(const std::string& endpoint, std::string* host, std::string* port) {
  std::string rest = endpoint.substr(6);
  if (auto semi = rest.find(';'); semi != std::string::npos) rest = rest.substr(semi + 1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  *host = rest.substr(0, colon);
  *port = rest.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return true;
}

// A tcp:// endpoint's port is 1-65535 (ZeroMQ would take 99999 modulo
// 65536); a bind may also ask for any free port with "*".
Status check_endpoint(const std::string& endpoint, bool bind) {
  if (endpoint.rfind("tcp://", 0) != 0) return Status::ok();
  std::string host, port;
  const std::string bad = "bad endpoint '" + endpoint + "': ";
  if (!split_tcp(endpoint, &host, &port) || host.empty())
    return Status(ErrorCode::kInvalidArgument, bad + "expected tcp://HOST:PORT");
  if (bind && port == "*") return Status::ok();
  const bool digits = !port.empty() && port.size() <= 5 &&
                      std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)
    return Status(ErrorCode::kInvalidArgument, bad + "the port must be 1-65535" + (bind ? " or *" : ""));
  return Status::ok();
}

bool is_loopback_address(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// Loopback by address: a numeric address in 127.0.0.0/8 or ::1, or a name
// every one of whose addresses is one ("localhost"). A name that does not
// resolve is refused: "127.example.com" is not loopback.
bool is_loopback_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool all = true;
  for (addrinfo* a = found; a; a = a->ai_next) all = all && is_loopback_address(a->ai_addr);
  ::freeaddrinfo(found);
  return all;
}

}  // namespace

const char* measure_error_kind_name(MeasureErrorKind kind) {
  switch (kind) {
    case MeasureErrorKind::kOk: return "ok";
    case MeasureErrorKind::kRuntimeError: return "runtime-error";
    case MeasureErrorKind::kCrash: return "crash";
    case MeasureErrorKind::kTimeout: return "timeout";
    case MeasureErrorKind::kWrongAnswer: return "wrong-answer";
    case MeasureErrorKind::kLoadError: return "load-error";
    case MeasureErrorKind::kNoWorker: return "no-worker";
    case MeasureErrorKind::kProtocolError: return "protocol-error";
    case MeasureErrorKind::kNoResult: return "no-result";
    case MeasureErrorKind::kSandboxError: return "sandbox-error";
    case MeasureErrorKind::kKilled: return "killed";
  }
  return "unknown";
}

bool is_infrastructure_error(MeasureErrorKind kind) {
  return kind == MeasureErrorKind::kNoWorker || kind == MeasureErrorKind::kProtocolError ||
         kind == MeasureErrorKind::kNoResult || kind == MeasureErrorKind::kSandboxError ||
         kind == MeasureErrorKind::kKilled;
}

double MeasureResult::mean_cost() const {
  if (costs_s.empty()) return std::numeric_limits<double>::infinity();
  double sum = 0;
  for (double c : costs_s) sum += c;
  return sum / static_cast<double>(costs_s.size());
}

Status check_insecure_endpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return Status::ok();
  std::string host, port;
  if (endpoint.rfind("tcp://", 0) == 0 && split_tcp(endpoint, &host, &port) && is_loopback_host(host))
    return Status::ok();
  return Status(ErrorCode::kInvalidArgument,
                "--insecure (plaintext) is allowed only on ipc:// or loopback endpoints "
                "(tcp://127.0.0.1, localhost, [::1]), not on '" +
                    endpoint +
                    "': workers run the code they receive, so use CURVE keys "
                    "(tessera keys generate) on any other address");
}

bool is_well_formed_endpoint(const std::string& endpoint) {
  return check_endpoint(endpoint, /*bind=*/true).is_ok();
}

Context::Context() : ctx_(zmq_ctx_new()) {}
Context::~Context() {
  if (ctx_) zmq_ctx_term(ctx_);
}

Result<Socket> Socket::create(void* ctx, int type, int64_t max_frame_bytes) {
  Socket socket;
  if (!ctx) return Status(ErrorCode::kIOError, "no ZeroMQ context");
  socket.s_ = zmq_socket(ctx, type);
  if (!socket.s_) return zmq_error("cannot create a ZeroMQ socket");
  TESSERA_RETURN_IF_ERROR(socket.set_int(ZMQ_LINGER, 0, "ZMQ_LINGER"));
  int64_t limit = max_frame_bytes;
  TESSERA_RETURN_IF_ERROR(socket.set(ZMQ_MAXMSGSIZE, &limit, sizeof limit, "ZMQ_MAXMSGSIZE"));
  // Reconnect quickly after a tracker restart, backing off to 1 s.
  TESSERA_RETURN_IF_ERROR(socket.set_int(ZMQ_RECONNECT_IVL, 100, "ZMQ_RECONNECT_IVL"));
  TESSERA_RETURN_IF_ERROR(socket.set_int(ZMQ_RECONNECT_IVL_MAX, 1000, "ZMQ_RECONNECT_IVL_MAX"));
  return socket;
}

Socket::~Socket() {
  if (s_) zmq_close(s_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (s_) zmq_close(s_);
    s_ = other.s_;
    other.s_ = nullptr;
  }
  return *this;
}

Status Socket::set(int option, const void* value, size_t size, const char* name) {
  if (zmq_setsockopt(s_, option, value, size) != 0) return zmq_error(std::string("cannot set ") + name);
  return Status::ok();
}

Status Socket::bind(const std::string& endpoint) {
  TESSERA_RETURN_IF_ERROR(check_endpoint(endpoint, true));
  if (zmq_bind(s_, endpoint.c_str()) != 0) return zmq_error("cannot bind " + endpoint);
  return Status::ok();
}

Status Socket::connect(const std::string& endpoint) {
  TESSERA_RETURN_IF_ERROR(check_endpoint(endpoint, false));
  if (zmq_connect(s_, endpoint.c_str()) != 0) return zmq_error("cannot connect to " + endpoint);
  return Status::ok();
}

std::string Socket::last_endpoint() const {
  char buf[512];
  size_t size = sizeof buf;
  if (zmq_getsockopt(s_, ZMQ_LAST_ENDPOINT, buf, &size) != 0) return "";
  return std::string(buf, size > 0 ? size - 1 : 0);
}

Status apply_server_security(Socket& socket, const SecurityOptions& security) {
  if (security.insecure) return Status::ok();
  if (security.own.secret_z85.size() != 40)
    return Status(ErrorCode::kInvalidArgument, "the tracker needs its CURVE secret key (40 Z85 characters)");
  TESSERA_RETURN_IF_ERROR(socket.set_int(ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER"));
  TESSERA_RETURN_IF_ERROR(socket.set(ZMQ_CURVE_SECRETKEY, security.own.secret_z85.c_str(), 41, "ZMQ_CURVE_SECRETKEY"));
  // A ZAP domain makes libzmq consult the handler (keys.h) for every peer.
  return socket.set(ZMQ_ZAP_DOMAIN, "tessera", 7, "ZMQ_ZAP_DOMAIN");
}

Status apply_client_security(Socket& socket, const SecurityOptions& security) {
  if (security.insecure) return Status::ok();
  if (security.own.public_z85.size() != 40 || security.own.secret_z85.size() != 40)
    return Status(ErrorCode::kInvalidArgument, "a CURVE keypair is needed (tessera keys generate), or --insecure");
  if (security.server_public_z85.size() != 40)
    return Status(ErrorCode::kInvalidArgument, "the tracker's CURVE public key is needed (--tracker-key)");
  TESSERA_RETURN_IF_ERROR(
      socket.set(ZMQ_CURVE_SERVERKEY, security.server_public_z85.c_str(), 41, "ZMQ_CURVE_SERVERKEY"));
  TESSERA_RETURN_IF_ERROR(socket.set(ZMQ_CURVE_PUBLICKEY, security.own.public_z85.c_str(), 41, "ZMQ_CURVE_PUBLICKEY"));
  return socket.set(ZMQ_CURVE_SECRETKEY, security.own.secret_z85.c_str(), 41, "ZMQ_CURVE_SECRETKEY");
}

Status send_envelope(Socket& socket, pb::Envelope envelope, const std::string& routing) {
  envelope.set_protocol_version(kProtocolVersion);
  std::string bytes;
  if (!envelope.SerializeToString(&bytes)) return Status(ErrorCode::kInternal, "cannot serialize an envelope");
  if (!routing.empty() && zmq_send(socket.get(), routing.data(), routing.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
    return Status(ErrorCode::kUnavailable, std::string("cannot send: ") + zmq_strerror(zmq_errno()));
  if (zmq_send(socket.get(), bytes.data(), bytes.size(), ZMQ_DONTWAIT) < 0)
    return Status(ErrorCode::kUnavailable, std::string("cannot send: ") + zmq_strerror(zmq_errno()));
  return Status::ok();
}

Result<Message> recv_message(Socket& socket, size_t max_frames) {
  Message message;
  int more = 1;
  bool first = true;
  while (more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket.get(), first ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&msg);
      if (first) return Status(ErrorCode::kUnavailable, "no message");
      return zmq_error("receiving a message");
    }
    // Set by the tracker's ZAP handler for CURVE peers: who sent this. A
    // ROUTER's routing frame carries no metadata; the peer's frames do.
    if (message.user_id.empty())
      if (const char* user = zmq_msg_gets(&msg, "User-Id")) message.user_id = user;
    first = false;
    if (message.frames.size() < max_frames)
      message.frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    else
      message.truncated = true;
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return message;
}

bool parse_envelope(const std::string& frame, pb::Envelope* out) {
  if (!out->ParseFromString(frame)) return false;
  return out->protocol_version() == kProtocolVersion && out->body_case() != pb::Envelope::BODY_NOT_SET;
}

bool is_valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (unsigned char c : name)
    if (!(std::isalnum(c) || std::strchr("._:@+-", c))) return false;
  return true;
}

std::string quoted(const std::string& text) {
  constexpr size_t kWhole = 64, kCut = 40;
  const bool cut = text.size() > kWhole;
  std::string out = "'";
  for (size_t i = 0; i < (cut ? kCut : text.size()); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += std::isprint(c) ? static_cast<char>(c) : '?';
  }
  out += cut ? "...' (" + std::to_string(text.size()) + " bytes)" : "'";
  return out;
}

int64_t arg_nbytes(const std::vector<int64_t>& shape, DType dtype) {
  int64_t n = dtype.storage_bytes();
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

namespace {

// What is wrong with a package-timing job, or "": packages within the
// limits, their parameters in range, and none of a kernel's fields.
std::string package_job_problem(const pb::Job& job, const WireLimits& limits) {
  const pb::PackageTiming& p = job.package_timing();
  if (!job.library().empty() || !job.symbol().empty() || job.args_size() > 0 || job.has_reference())
    return "a package-timing job has no library, symbol, arguments or reference";
  if (p.packages_size() < 1 || p.packages_size() > limits.max_packages)
    return "needs 1-" + std::to_string(limits.max_packages) + " packages";
  int64_t total = 0;
  for (const std::string& package : p.packages()) {
    if (package.empty()) return "an empty package";
    total += static_cast<int64_t>(package.size());
  }
  if (total > limits.max_package_bytes())
    return "packages of " + std::to_string(total) + " bytes exceed the limit of " +
           std::to_string(limits.max_package_bytes());
  if (p.whole_runs()) {
    if (p.rounds() < 1 || p.rounds() > 100) return "package_timing.rounds out of range (1-100)";
    if (!std::isfinite(p.round_seconds()) || p.round_seconds() <= 0 || p.round_seconds() > 10)
      return "package_timing.round_seconds out of range (0-10 s)";
  } else if (p.runs() < 1 || p.runs() > 1000) {
    return "package_timing.runs out of range (1-1000)";
  }
  if (job.timeout_ms() < 1 || job.timeout_ms() > limits.max_timeout_ms) return "timeout_ms out of range";
  return "";
}

}  // namespace

Status validate_job(const pb::Job& job, const WireLimits& limits) {
  auto bad = [&](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "job " + std::to_string(job.job_id()) + ": " + why);
  };
  if (!is_valid_name(job.session_id())) return bad("bad session id");
  if (!is_valid_name(job.device_key())) return bad("bad device key (1-128 of [A-Za-z0-9._:@+-])");
  if (job.avoid_workers_size() > 64) return bad("more than 64 workers to avoid");
  for (const auto& w : job.avoid_workers())
    if (!is_valid_name(w)) return bad("bad worker id to avoid");
  if (job.has_package_timing()) {
    const std::string problem = package_job_problem(job, limits);
    return problem.empty() ? Status::ok() : bad(problem);
  }
  if (!is_symbol(job.symbol())) return bad("bad entry symbol");
  if (job.library().empty()) return bad("empty library");
  if (static_cast<int64_t>(job.library().size()) > limits.max_library_bytes)
    return bad("library of " + std::to_string(job.library().size()) + " bytes exceeds the limit of " +
               std::to_string(limits.max_library_bytes));
  if (job.args_size() < 1 || job.args_size() > limits.max_args)
    return bad("needs 1-" + std::to_string(limits.max_args) + " arguments");
  int64_t last_bytes = 0, last_elements = 0;
  for (const auto& arg : job.args()) {
    DType dtype;
    if (!DType::parse(arg.dtype(), &dtype)) return bad("unknown dtype '" + arg.dtype().substr(0, 32) + "'");
    if (arg.shape_size() > limits.max_rank) return bad("argument of rank > " + std::to_string(limits.max_rank));
    std::vector<int64_t> shape(arg.shape().begin(), arg.shape().end());
    last_bytes = arg_nbytes(shape, dtype);
    if (last_bytes < 0 || last_bytes > limits.max_arg_bytes) return bad("argument too large or negative extent");
    last_elements = last_bytes / dtype.storage_bytes();
  }
  if (job.args(job.args_size() - 1).cold()) return bad("the output (the last argument) cannot be cold");
  const auto& t = job.timing();
  if (t.number() < 1 || t.number() > limits.max_number) return bad("timing.number out of range");
  if (t.repeat() < 1 || t.repeat() > limits.max_repeat) return bad("timing.repeat out of range");
  if (!std::isfinite(t.min_repeat_ms()) || t.min_repeat_ms() < 0 || t.min_repeat_ms() > 600000)
    return bad("timing.min_repeat_ms out of range");
  if (!std::isfinite(t.cooldown_ms()) || t.cooldown_ms() < 0 || t.cooldown_ms() > 600000)
    return bad("timing.cooldown_ms out of range");
  if (!std::isfinite(t.stop_above_s()) || t.stop_above_s() < 0) return bad("timing.stop_above_s out of range");
  if (job.timeout_ms() < 1 || job.timeout_ms() > limits.max_timeout_ms) return bad("timeout_ms out of range");
  if (job.has_reference()) {
    const auto& ref = job.reference();
    if (static_cast<int64_t>(ref.expected_output().size()) > limits.max_reference_bytes)
      return bad("reference output too large");
    if (ref.points_size() > limits.max_reference_points)
      return bad("reference check of more than " + std::to_string(limits.max_reference_points) + " points");
    for (uint64_t p : ref.points())
      if (p >= static_cast<uint64_t>(last_elements))
        return bad("reference point " + std::to_string(p) + " is outside the last argument's " +
                   std::to_string(last_elements) + " elements");
    // Sampled: one element per point; whole: the argument's bytes.
    const int64_t want_bytes = ref.points_size() == 0 ? last_bytes
                                                      : static_cast<int64_t>(ref.points_size()) *
                                                            (last_elements ? last_bytes / last_elements : 0);
    if (static_cast<int64_t>(ref.expected_output().size()) != want_bytes)
      return bad("reference output has " + std::to_string(ref.expected_output().size()) + " bytes, expected " +
                 std::to_string(want_bytes) +
                 (ref.points_size() == 0 ? " (the last argument)" : " (one element per point)"));
    if (!std::isfinite(ref.tolerance()) || ref.tolerance() < 0) return bad("bad reference tolerance");
  }
  return Status::ok();
}

Status validate_result(const pb::Result& result) {
  if (!is_valid_name(result.session_id())) return Status(ErrorCode::kInvalidArgument, "result: bad session id");
  if (!pb::ErrorKind_IsValid(result.error())) return Status(ErrorCode::kInvalidArgument, "result: bad error kind");
  if (result.costs_s_size() > 100000) return Status(ErrorCode::kInvalidArgument, "result: too many costs");
  if (result.threads() > kMaxResultThreads)
    return Status(ErrorCode::kInvalidArgument, "result: more than 4096 threads");
  if (!std::isfinite(result.check_seconds()) || result.check_seconds() < 0)
    return Status(ErrorCode::kInvalidArgument, "result: bad check time");
  for (double c : result.costs_s())
    if (!std::isfinite(c) || c < 0) return Status(ErrorCode::kInvalidArgument, "result: bad cost");
  const pb::PackageTimes& p = result.package_times();
  if (p.calls_size() > 64 || p.median_s_size() > 64 || p.ratio_to_first_size() > 64 || p.rounds_slower_size() > 64 ||
      p.rounds() < 0 || p.rounds() > 100)
    return Status(ErrorCode::kInvalidArgument, "result: package times out of bounds");
  auto bad_seconds = [](double s) { return !std::isfinite(s) || s < 0; };
  for (const pb::CallSeconds& calls : p.calls()) {
    if (calls.seconds_size() > (1 << 20))
      return Status(ErrorCode::kInvalidArgument, "result: a package of too many calls");
    if (std::any_of(calls.seconds().begin(), calls.seconds().end(), bad_seconds))
      return Status(ErrorCode::kInvalidArgument, "result: bad call time");
  }
  if (std::any_of(p.median_s().begin(), p.median_s().end(), bad_seconds) ||
      std::any_of(p.ratio_to_first().begin(), p.ratio_to_first().end(), bad_seconds))
    return Status(ErrorCode::kInvalidArgument, "result: bad package time");
  for (int32_t slower : p.rounds_slower())
    if (slower < 0 || slower > p.rounds()) return Status(ErrorCode::kInvalidArgument, "result: bad rounds slower");
  if (result.message().size() > 65536 || !is_printable(result.worker_id(), 128) ||
      !is_printable(result.worker_public_key(), 40))
    return Status(ErrorCode::kInvalidArgument, "result: oversized message or bad worker id");
  return Status::ok();
}

Status validate_register(const pb::Register& reg) {
  if (!is_valid_name(reg.worker_id())) return Status(ErrorCode::kInvalidArgument, "register: bad worker id");
  if (!is_valid_name(reg.device_key())) return Status(ErrorCode::kInvalidArgument, "register: bad device key");
  if (!is_printable(reg.target(), 512) || !is_printable(reg.incarnation(), 64) || reg.incarnation().empty())
    return Status(ErrorCode::kInvalidArgument, "register: bad target or incarnation");
  if (reg.max_jobs() < 1 || reg.max_jobs() > 256)
    return Status(ErrorCode::kInvalidArgument, "register: max_jobs 1-256");
  if (reg.capabilities_size() > 64) return Status(ErrorCode::kInvalidArgument, "register: too many capabilities");
  for (const auto& c : reg.capabilities())
    if (!is_printable(c, 128)) return Status(ErrorCode::kInvalidArgument, "register: bad capability");
  return Status::ok();
}

pb::Job to_wire_job(const MeasureInput& input) {
  pb::Job job;
  job.set_priority(input.priority);
  job.set_library(input.library);
  job.set_symbol(input.symbol);
  for (const auto& arg : input.args) {
    auto* spec = job.add_args();
    for (int64_t d : arg.shape) spec->add_shape(d);
    spec->set_dtype(arg.dtype.to_string());
    spec->set_cold(arg.cold);
  }
  auto* timing = job.mutable_timing();
  timing->set_number(input.timing.number);
  timing->set_repeat(input.timing.repeat);
  timing->set_min_repeat_ms(input.timing.min_repeat_ms);
  timing->set_cooldown_ms(input.timing.cooldown_ms);
  timing->set_flush_cache(input.timing.flush_cache);
  timing->set_stop_above_s(input.timing.stop_above_s);
  job.set_timeout_ms(input.timeout_ms > 0 ? static_cast<uint32_t>(input.timeout_ms) : 0);
  job.set_input_seed(input.input_seed);
  for (const auto& w : input.avoid_workers) job.add_avoid_workers(w);
  if (input.packages) {
    pb::PackageTiming* p = job.mutable_package_timing();
    for (const std::string& package : input.packages->packages) p->add_packages(package);
    p->set_whole_runs(input.packages->whole_runs);
    p->set_runs(input.packages->runs);
    p->set_rounds(input.packages->rounds.rounds);
    p->set_round_seconds(input.packages->rounds.round_s);
  }
  if (input.reference) {
    job.mutable_reference()->set_expected_output(input.reference->expected_output);
    job.mutable_reference()->set_tolerance(input.reference->tolerance);
    for (int64_t p : input.reference->points) job.mutable_reference()->add_points(static_cast<uint64_t>(p));
  }
  return job;
}

MeasureResult from_wire_result(const pb::Result& result) {
  MeasureResult out;
  out.costs_s.assign(result.costs_s().begin(), result.costs_s().end());
  out.error = static_cast<MeasureErrorKind>(result.error());
  out.message = result.message();
  out.worker_id = result.worker_id();
  out.worker_public_key = result.worker_public_key();
  out.run_seconds = result.run_seconds();
  out.check_seconds = result.check_seconds();
  out.threads = static_cast<int>(result.threads());
  const pb::PackageTimes& p = result.package_times();
  for (const pb::CallSeconds& calls : p.calls())
    out.call_medians_s.emplace_back(calls.seconds().begin(), calls.seconds().end());
  out.whole.median_s.assign(p.median_s().begin(), p.median_s().end());
  out.whole.ratio_to_first.assign(p.ratio_to_first().begin(), p.ratio_to_first().end());
  out.whole.rounds_slower.assign(p.rounds_slower().begin(), p.rounds_slower().end());
  out.whole.rounds = p.rounds();
  return out;
}

pb::Result error_result(const pb::Job& job, pb::ErrorKind kind, const std::string& message,
                        const std::string& worker_id) {
  pb::Result r;
  r.set_job_id(job.job_id());
  r.set_session_id(job.session_id());
  r.set_attempt(job.attempt());
  r.set_error(kind);
  r.set_message(message);
  r.set_worker_id(worker_id);
  return r;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // fall back to the clock below; ids need uniqueness, not secrecy
    got += static_cast<size_t>(n);
  }
  if (got < bytes) {
    uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    for (size_t i = got; i < bytes; ++i) raw[i] = static_cast<char>((x >> ((i % 8) * 8)) ^ i);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace tessera::rpc
