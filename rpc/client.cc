#include "rpc/client.h"

#include <zmq.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "rpc/handshake.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// A DEALER connected to the tracker, plus a watch that says why a handshake
// failed (handshake.h).
Result<Socket> open_dealer(void* ctx, const std::string& endpoint, const SecurityOptions& security,
                           const std::string& routing, int64_t max_frame, HandshakeWatch* watch) {
  if (security.insecure) TESSERA_RETURN_IF_ERROR(check_insecure_endpoint(endpoint));
  TESSERA_ASSIGN_OR_RETURN(Socket s, Socket::create(ctx, ZMQ_DEALER, max_frame));
  if (!routing.empty())
    TESSERA_RETURN_IF_ERROR(s.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "ZMQ_ROUTING_ID"));
  TESSERA_RETURN_IF_ERROR(s.set_int(ZMQ_SNDHWM, 100000, "ZMQ_SNDHWM"));
  TESSERA_RETURN_IF_ERROR(s.set_int(ZMQ_RCVHWM, 100000, "ZMQ_RCVHWM"));
  TESSERA_RETURN_IF_ERROR(apply_client_security(s, security));
  if (watch) {
    TESSERA_ASSIGN_OR_RETURN(*watch, HandshakeWatch::attach(ctx, s, endpoint, security, "client"));
  }
  TESSERA_RETURN_IF_ERROR(s.connect(endpoint));
  return s;
}

}  // namespace

RpcClient::RpcClient(ClientOptions options) : options_(std::move(options)) {
  if (options_.session_id.empty()) options_.session_id = "s-" + random_hex(8);
}

RpcClient::~RpcClient() = default;

Result<std::unique_ptr<RpcClient>> RpcClient::connect(ClientOptions options) {
  if (!is_valid_name(options.session_id) && !options.session_id.empty())
    return Status(ErrorCode::kInvalidArgument, "bad session id '" + options.session_id + "'");
  std::unique_ptr<RpcClient> client(new RpcClient(std::move(options)));
  TESSERA_RETURN_IF_ERROR(client->open());
  return client;
}

Status RpcClient::open() {
  TESSERA_ASSIGN_OR_RETURN(socket_, open_dealer(ctx_.get(), options_.tracker, options_.security,
                                                "c:" + options_.session_id, 64 << 20, &watch_));
  next_sync_ = Clock::now() + std::chrono::milliseconds(options_.sync_ms);
  last_heard_ = Clock::now();
  return Status::ok();
}

uint64_t RpcClient::submit(const MeasureInput& input, const std::string& device_key) {
  pb::Job job = to_wire_job(input);
  job.set_job_id(next_id_++);
  job.set_session_id(options_.session_id);
  job.set_device_key(device_key);
  pb::Envelope env;
  *env.mutable_submit() = job;
  (void)send_envelope(socket_, env);  // if it is lost, the next sync submits it again
  const uint64_t id = job.job_id();
  outstanding_.emplace(id, std::move(job));
  return id;
}

void RpcClient::cancel(const std::vector<uint64_t>& job_ids) {
  pb::Envelope env;
  env.mutable_cancel()->set_session_id(options_.session_id);
  for (uint64_t id : job_ids) {
    if (outstanding_.erase(id)) env.mutable_cancel()->add_job_ids(id);
  }
  if (env.cancel().job_ids_size() > 0) (void)send_envelope(socket_, env);
}

void RpcClient::sync() {
  pb::Envelope env;
  env.mutable_sync()->set_session_id(options_.session_id);
  for (const auto& [id, job] : outstanding_) env.mutable_sync()->add_outstanding(id);
  (void)send_envelope(socket_, env);
}

void RpcClient::read_monitor() {
  watch_.read();
  if (watch_.failures() > 0)
    auth_status_ = watch_.status();
  else if (refused_.is_ok())
    auth_status_ = Status::ok();
}

std::vector<std::pair<uint64_t, MeasureResult>> RpcClient::poll(int timeout_ms) {
  std::vector<std::pair<uint64_t, MeasureResult>> results;
  const auto until = Clock::now() + std::chrono::milliseconds(std::max(0, timeout_ms));
  while (true) {
    auto now = Clock::now();
    if (now >= next_sync_) {
      if (!outstanding_.empty()) sync();
      next_sync_ = now + std::chrono::milliseconds(options_.sync_ms);
    }
    const auto wake = std::min(until, next_sync_);
    const long wait = std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count());
    zmq_pollitem_t items[2] = {{socket_.get(), 0, ZMQ_POLLIN, 0}, {watch_.socket(), 0, ZMQ_POLLIN, 0}};
    zmq_poll(items, 2, results.empty() ? wait : 0);
    if (items[1].revents & ZMQ_POLLIN) read_monitor();
    while (auto msg = recv_message(socket_)) {
      pb::Envelope env;
      if (msg->frames.size() != 1 || !parse_envelope(msg->frames[0], &env)) continue;
      last_heard_ = Clock::now();
      if (env.has_result()) {
        const pb::Result& r = env.result();
        if (r.session_id() != options_.session_id || !validate_result(r).is_ok()) continue;
        if (outstanding_.erase(r.job_id()) == 0) continue;  // a duplicate, or a job we cancelled
        results.emplace_back(r.job_id(), from_wire_result(r));
      } else if (env.has_refused()) {
        refused_ = Status(ErrorCode::kUnavailable, env.refused().reason().substr(0, 1024));
        auth_status_ = refused_;
      } else if (env.has_sync_reply()) {
        for (uint64_t id : env.sync_reply().unknown()) {
          auto it = outstanding_.find(id);
          if (it == outstanding_.end()) continue;
          pb::Envelope again;
          *again.mutable_submit() = it->second;
          (void)send_envelope(socket_, again);
        }
      }
    }
    if (!results.empty() || Clock::now() >= until) break;
  }
  return results;
}

Result<pb::FarmStatus> query_farm_status(const std::string& endpoint, const SecurityOptions& security, int timeout_ms) {
  Context ctx;
  Socket s;
  HandshakeWatch watch;  // after s: stops monitoring before s closes
  TESSERA_ASSIGN_OR_RETURN(s, open_dealer(ctx.get(), endpoint, security, "", 64 << 20, &watch));
  pb::Envelope env;
  env.mutable_status_request();
  TESSERA_RETURN_IF_ERROR(send_envelope(s, env));
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < until) {
    zmq_pollitem_t items[2] = {{s.get(), 0, ZMQ_POLLIN, 0}, {watch.socket(), 0, ZMQ_POLLIN, 0}};
    zmq_poll(items, 2, 50);
    watch.read();
    while (auto msg = recv_message(s)) {
      pb::Envelope reply;
      if (msg->frames.size() == 1 && parse_envelope(msg->frames[0], &reply) && reply.has_farm_status())
        return reply.farm_status();
    }
    if (watch.failures() > 0) return watch.status();
  }
  return Status(ErrorCode::kUnavailable,
                "no answer from a tracker at " + endpoint + " within " + std::to_string(timeout_ms) + " ms");
}

std::string format_farm_status(const pb::FarmStatus& st) {
  std::vector<std::vector<std::string>> rows = {
      {"key", "workers", "busy", "idle", "queued", "done", "failed", "targets"}};
  for (const auto& k : st.keys()) {
    std::string targets;
    for (const auto& t : k.targets()) targets += (targets.empty() ? "" : "; ") + t;
    rows.push_back({k.key(), std::to_string(k.workers()), std::to_string(k.busy()), std::to_string(k.idle()),
                    std::to_string(k.queued()), std::to_string(k.done()), std::to_string(k.failed()), targets});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::ostringstream out;
  char buf[128];
  std::snprintf(buf, sizeof buf, "tracker %s, up %.0f s, %u session(s)\n", st.tracker_instance().c_str(), st.uptime_s(),
                st.sessions());
  out << buf;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool numeric = i >= 1 && i <= 6;
      const std::string pad(width[i] - row[i].size(), ' ');
      line += (numeric ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : "")) + (i + 1 < row.size() ? "  " : "");
    }
    out << line << "\n";
  }
  if (st.keys_size() == 0) out << "(no workers and no jobs)\n";
  out << "malformed frames: " << st.malformed_frames() << " (tracker), " << st.worker_malformed_frames()
      << " (workers); duplicate results dropped: " << st.duplicate_results()
      << "; requeued jobs: " << st.requeued_jobs() << "; dead workers: " << st.dead_workers()
      << "; refused keys: " << st.auth_refused() << "; refused for their role: " << st.role_refused()
      << "; foreign results dropped: " << st.foreign_results() << "\n";
  return out.str();
}

}  // namespace tessera::rpc
