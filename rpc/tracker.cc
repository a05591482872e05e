#include "rpc/tracker.h"

#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "rpc/keys.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;
using JobKey = std::pair<std::string, uint64_t>;            // (session, job id)
using QueueItem = std::tuple<int64_t, uint64_t, uint64_t>;  // (-priority, seq, job id)

enum class JobState { kQueued, kRunning, kDone };

struct JobEntry {
  pb::Job job;  // keeps the library so a dead worker's job can be dispatched again
  JobState state = JobState::kQueued;
  uint64_t seq = 0;
  std::string worker;              // current assignee while running
  std::set<std::string> given_to;  // every worker it was dispatched to: only they may return its result
  Clock::time_point submitted, dispatched, done_at;
  pb::Result result;
  bool cancelled = false;
};

struct KeyState {
  std::map<std::string, std::set<QueueItem>> queues;  // per session
  std::map<std::string, uint64_t> served;             // dispatches per session (fair share)
  size_t queued = 0;
  uint64_t done = 0, failed = 0;
};

struct WorkerEntry {
  pb::Register reg;
  std::string routing;
  std::string public_key;  // as authenticated at registration; empty on plaintext
  std::set<JobKey> assigned;
  Clock::time_point last_seen;
  uint64_t malformed = 0;
};

int64_t job_bytes(const pb::Job& job) {
  int64_t bytes = static_cast<int64_t>(job.library().size() + job.reference().expected_output().size());
  for (const std::string& p : job.package_timing().packages()) bytes += static_cast<int64_t>(p.size());
  return bytes;
}

bool times_packages(const pb::Register& reg) {
  const auto& c = reg.capabilities();
  return std::find(c.begin(), c.end(), kTimesPackages) != c.end();
}

}  // namespace

class Tracker::Impl {
 public:
  explicit Impl(TrackerOptions options)
      : options_(std::move(options)),
        log_("tracker", options_.log ? std::min(options_.log_level, LogLevel::kInfo) : options_.log_level) {}

  Status bind() {
    if (options_.security.insecure) {
      TESSERA_RETURN_IF_ERROR(check_insecure_endpoint(options_.bind));
    } else {
      if (options_.authorized.empty())
        return Status(ErrorCode::kInvalidArgument, "no authorized public keys: nobody could connect (--authorized)");
      zap_ = std::make_unique<ZapHandler>(ctx_.get(), options_.authorized, &log_);
      TESSERA_RETURN_IF_ERROR(zap_->status());
      size_t any = 0;
      for (const auto& [key, role] : options_.authorized) any += role == KeyRole::kAny;
      if (any > 0)
        log_.warn(
            "%zu authorized key(s) have no role and may both register as workers and submit jobs; "
            "put them in workers/ or clients/ (tessera keys generate --role)",
            any);
    }
    TESSERA_ASSIGN_OR_RETURN(socket_, Socket::create(ctx_.get(), ZMQ_ROUTER, options_.limits.max_frame_bytes()));
    // A peer that reconnects under the same routing id (after a restart on
    // either side) takes over its old identity.
    TESSERA_RETURN_IF_ERROR(socket_.set_int(ZMQ_ROUTER_HANDOVER, 1, "ZMQ_ROUTER_HANDOVER"));
    TESSERA_RETURN_IF_ERROR(socket_.set_int(ZMQ_SNDHWM, 100000, "ZMQ_SNDHWM"));
    TESSERA_RETURN_IF_ERROR(socket_.set_int(ZMQ_RCVHWM, 100000, "ZMQ_RCVHWM"));
    TESSERA_RETURN_IF_ERROR(apply_server_security(socket_, options_.security));
    TESSERA_RETURN_IF_ERROR(socket_.bind(options_.bind));
    endpoint_ = socket_.last_endpoint();
    instance_ = random_hex(8);
    started_ = Clock::now();
    log_.info("tracker %s listening on %s (%s)", instance_.c_str(), endpoint_.c_str(),
              options_.security.insecure ? "plaintext" : "CURVE");
    return Status::ok();
  }

  std::string endpoint() const { return endpoint_; }

  Status run(const std::atomic<bool>& stop) {
    if (!socket_) return Status(ErrorCode::kInvalidArgument, "Tracker::run before bind()");
    auto next_check = Clock::now();
    while (!stop) {
      zmq_pollitem_t item = {socket_.get(), 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 20) < 0 && zmq_errno() != EINTR) return Status(ErrorCode::kIOError, "zmq_poll failed");
      for (int i = 0; i < 1000; ++i) {  // bounded so housekeeping still runs under a flood
        auto msg = recv_message(socket_);
        if (!msg.is_ok()) break;
        handle(*msg);
      }
      if (Clock::now() >= next_check) {
        housekeeping();
        next_check = Clock::now() + std::chrono::milliseconds(50);
      }
    }
    return Status::ok();
  }

 private:
  void reply(const std::string& routing, const pb::Envelope& env) { (void)send_envelope(socket_, env, routing); }

  void handle(const Message& msg) {
    pb::Envelope env;
    if (msg.frames.size() != 2 || msg.truncated || !parse_envelope(msg.frames[1], &env)) {
      ++malformed_;
      return;
    }
    const std::string& from = msg.frames[0];
    const PeerIdentity peer = parse_peer_identity(msg.user_id);
    if (!role_allows(from, peer, env.body_case())) return;
    switch (env.body_case()) {
      case pb::Envelope::kSubmit: on_submit(from, std::move(*env.mutable_submit())); break;
      case pb::Envelope::kResult: on_result(from, peer, env.mutable_result()); break;
      case pb::Envelope::kRegister: on_register(from, peer, env.register_()); break;
      case pb::Envelope::kHeartbeat: on_heartbeat(from, env.heartbeat()); break;
      case pb::Envelope::kSync: on_sync(from, env.sync()); break;
      case pb::Envelope::kCancel: on_cancel(env.cancel()); break;
      case pb::Envelope::kStatusRequest: {
        pb::Envelope out;
        *out.mutable_farm_status() = farm_status();
        reply(from, out);
        break;
      }
      default: ++malformed_;
    }
  }

  // A client key may not act as a worker (register, heartbeat, result); a
  // worker key may not submit, sync or cancel. The refused peer is told why.
  bool role_allows(const std::string& from, const PeerIdentity& peer, pb::Envelope::BodyCase body) {
    using E = pb::Envelope;
    const bool worker_msg = body == E::kRegister || body == E::kHeartbeat || body == E::kResult;
    const bool client_msg = body == E::kSubmit || body == E::kSync || body == E::kCancel;
    std::string why;
    if (peer.role == KeyRole::kClient && worker_msg)
      why = "key " + peer.public_key + " is a client key; only worker keys may register as workers";
    else if (peer.role == KeyRole::kWorker && client_msg)
      why = "key " + peer.public_key + " is a worker key; only client keys may submit jobs";
    if (why.empty()) return true;
    ++role_refused_;
    log_.warn("refused %s: %s", from.c_str(), why.c_str());
    pb::Envelope out;
    out.mutable_refused()->set_reason("the tracker refused this peer: " + why);
    reply(from, out);
    return false;
  }

  void send_result(const std::string& session, const pb::Result& result) {
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;  // the client asks again with Sync
    pb::Envelope env;
    *env.mutable_result() = result;
    reply(it->second.routing, env);
  }

  void touch_session(const std::string& session, const std::string& routing) {
    SessionEntry& entry = sessions_[session];
    entry.routing = routing;
    entry.last_seen = Clock::now();
  }

  void on_submit(const std::string& from, pb::Job job) {
    job.set_attempt(0);
    Status valid = validate_job(job, options_.limits);
    if (!valid.is_ok()) {
      ++malformed_;
      if (is_valid_name(job.session_id())) {
        touch_session(job.session_id(), from);
        send_result(job.session_id(), error_result(job, pb::PROTOCOL_ERROR, valid.message()));
      }
      return;
    }
    touch_session(job.session_id(), from);
    JobKey key{job.session_id(), job.job_id()};
    if (auto it = jobs_.find(key); it != jobs_.end()) {
      if (it->second.state == JobState::kDone && !it->second.cancelled) send_result(key.first, it->second.result);
      return;  // already known: a resubmission after a lost reply
    }
    if (active_jobs_ >= options_.max_queued_jobs || held_bytes_ + job_bytes(job) > options_.max_queued_bytes) {
      send_result(key.first, error_result(job, pb::PROTOCOL_ERROR,
                                          "the tracker's queue is full (" + std::to_string(active_jobs_) + " jobs, " +
                                              std::to_string(held_bytes_ >> 20) + " MiB held); retry later"));
      return;
    }
    JobEntry& entry = jobs_[key];
    entry.seq = next_seq_++;
    entry.submitted = Clock::now();
    held_bytes_ += job_bytes(job);
    ++active_jobs_;
    entry.job = std::move(job);
    enqueue(key, entry);
    dispatch(entry.job.device_key());
  }

  void enqueue(const JobKey& key, JobEntry& entry) {
    entry.state = JobState::kQueued;
    entry.worker.clear();
    KeyState& ks = keys_[entry.job.device_key()];
    ks.queues[key.first].insert({-static_cast<int64_t>(entry.job.priority()), entry.seq, key.second});
    ++ks.queued;
  }

  void unqueue(const JobKey& key, JobEntry& entry) {
    KeyState& ks = keys_[entry.job.device_key()];
    auto q = ks.queues.find(key.first);
    if (q == ks.queues.end()) return;
    if (q->second.erase({-static_cast<int64_t>(entry.job.priority()), entry.seq, key.second})) --ks.queued;
    if (q->second.empty()) ks.queues.erase(q);
  }

  // Whether `worker` should leave the job to another: the client asked to
  // avoid it and another worker of the key, not avoided, is registered.
  bool avoids(const pb::Job& job, const std::string& worker) const {
    // A package job only for a worker that times packages (an older one
    // would refuse it as malformed).
    if (job.has_package_timing()) {
      const auto it = workers_.find(worker);
      if (it == workers_.end() || !times_packages(it->second.reg)) return true;
    }
    if (job.avoid_workers().empty()) return false;
    const auto& avoid = job.avoid_workers();
    if (std::find(avoid.begin(), avoid.end(), worker) == avoid.end()) return false;
    for (const auto& [id, w] : workers_)
      if (w.reg.device_key() == job.device_key() && std::find(avoid.begin(), avoid.end(), id) == avoid.end())
        return true;
    return false;
  }

  // The next job of `key` for `worker`: the highest priority first; among the
  // sessions that have a job at that priority, the one served least so far.
  // Jobs that would rather go to another worker (avoids) are passed over.
  bool pick(KeyState& ks, const std::string& worker, JobKey* out) {
    const std::string* best = nullptr;
    const QueueItem* best_item = nullptr;
    for (const auto& [session, queue] : ks.queues) {
      const QueueItem* first = nullptr;
      for (const auto& item : queue)
        if (!avoids(jobs_[{session, std::get<2>(item)}].job, worker)) {
          first = &item;
          break;
        }
      if (!first) continue;
      if (!best || std::get<0>(*first) < std::get<0>(*best_item) ||
          (std::get<0>(*first) == std::get<0>(*best_item) && ks.served[session] < ks.served[*best])) {
        best = &session;
        best_item = first;
      }
    }
    if (!best) return false;
    *out = {*best, std::get<2>(*best_item)};
    return true;
  }

  void dispatch(const std::string& device_key) {
    KeyState& ks = keys_[device_key];
    for (auto& [id, worker] : workers_) {
      if (worker.reg.device_key() != device_key) continue;
      while (worker.assigned.size() < worker.reg.max_jobs() && ks.queued > 0) {
        JobKey key;
        if (!pick(ks, id, &key)) break;  // nothing this worker should take: the next may
        JobEntry& entry = jobs_[key];
        unqueue(key, entry);
        ++ks.served[key.first];
        entry.state = JobState::kRunning;
        entry.worker = id;
        entry.given_to.insert(id);
        entry.dispatched = Clock::now();
        entry.job.set_attempt(entry.job.attempt() + 1);
        worker.assigned.insert(key);
        pb::Envelope env;
        *env.mutable_dispatch() = entry.job;
        reply(worker.routing, env);  // a lost dispatch shows up missing in the next heartbeat
      }
    }
  }

  void finish(const JobKey& key, JobEntry& entry, const pb::Result& result) {
    if (entry.state == JobState::kQueued) unqueue(key, entry);
    entry.state = JobState::kDone;
    entry.done_at = Clock::now();
    entry.result = result;
    entry.result.set_job_id(key.second);
    entry.result.set_session_id(key.first);
    held_bytes_ -= job_bytes(entry.job);
    --active_jobs_;
    entry.job.clear_library();  // the bytes are not needed any more
    entry.job.clear_reference();
    if (entry.job.has_package_timing()) entry.job.mutable_package_timing()->clear_packages();
    KeyState& ks = keys_[entry.job.device_key()];
    (result.error() == pb::OK ? ks.done : ks.failed)++;
    if (!entry.cancelled) send_result(key.first, entry.result);
  }

  // A result counts only from a worker the job was dispatched to, under the
  // key that worker registered with; anything else is dropped and counted.
  void on_result(const std::string& from, const PeerIdentity& peer, pb::Result* result) {
    if (!validate_result(*result).is_ok() || from.rfind("w:", 0) != 0) {
      ++malformed_;
      return;
    }
    const std::string worker_id = from.substr(2);
    JobKey key{result->session_id(), result->job_id()};
    auto w = workers_.find(worker_id);
    if (w != workers_.end() && w->second.public_key != peer.public_key) w = workers_.end();  // an impostor
    if (w != workers_.end()) w->second.assigned.erase(key);
    auto it = jobs_.find(key);
    if (it == jobs_.end() || it->second.state == JobState::kDone) {
      ++duplicates_;  // finished already, or from before this tracker started: first result wins
      if (it != jobs_.end()) dispatch(it->second.job.device_key());
      return;
    }
    JobEntry& entry = it->second;
    if (w == workers_.end() || !entry.given_to.count(worker_id)) {
      ++foreign_results_;
      log_.warn("dropped a result for %s/%llu from %s%s: the job was not given to it", key.first.c_str(),
                static_cast<unsigned long long>(key.second), worker_id.c_str(),
                w == workers_.end() ? " (not registered under this key)" : "");
      return;
    }
    if (entry.state == JobState::kRunning && entry.worker != worker_id) {
      if (auto other = workers_.find(entry.worker); other != workers_.end()) other->second.assigned.erase(key);
    }
    result->set_worker_id(worker_id);  // what the tracker knows, not what the sender claims
    result->set_worker_public_key(peer.public_key);
    finish(key, entry, *result);
    dispatch(entry.job.device_key());
  }

  void requeue(const JobKey& key, const char* why) {
    auto it = jobs_.find(key);
    if (it == jobs_.end() || it->second.state != JobState::kRunning) return;
    log_.info("requeue %s/%llu (%s, was on %s)", key.first.c_str(), static_cast<unsigned long long>(key.second), why,
              it->second.worker.c_str());
    ++requeued_;
    enqueue(key, it->second);
  }

  void on_register(const std::string& from, const PeerIdentity& peer, const pb::Register& reg) {
    if (!validate_register(reg).is_ok() || from != "w:" + reg.worker_id()) {
      ++malformed_;
      return;
    }
    if (auto held = workers_.find(reg.worker_id());
        held != workers_.end() && held->second.public_key != peer.public_key) {
      ++role_refused_;
      pb::Envelope out;
      out.mutable_refused()->set_reason("the tracker refused this peer: worker id '" + reg.worker_id() +
                                        "' is registered under another key");
      reply(from, out);
      return;
    }
    auto [it, fresh] = workers_.try_emplace(reg.worker_id());
    WorkerEntry& w = it->second;
    w.public_key = peer.public_key;
    if (!fresh && w.reg.incarnation() != reg.incarnation()) {
      // The same worker id restarted: what the old process held is lost.
      for (const auto& key : std::set<JobKey>(w.assigned)) requeue(key, "worker restarted");
      w.assigned.clear();
    }
    const std::string old_key = w.reg.device_key();
    w.reg = reg;
    w.routing = from;
    w.last_seen = Clock::now();
    if (fresh)
      log_.info("worker %s registered for key %s (%s)", reg.worker_id().c_str(), reg.device_key().c_str(),
                reg.target().c_str());
    pb::Envelope env;
    env.mutable_register_ack()->set_tracker_instance(instance_);
    env.mutable_register_ack()->set_heartbeat_interval_ms(static_cast<uint32_t>(options_.heartbeat_ms));
    reply(from, env);
    if (!old_key.empty() && old_key != reg.device_key()) dispatch(old_key);
    dispatch(reg.device_key());
  }

  void on_heartbeat(const std::string& from, const pb::Heartbeat& hb) {
    auto it = workers_.find(hb.worker_id());
    if (it == workers_.end() || it->second.reg.incarnation() != hb.incarnation() || from != "h:" + hb.worker_id()) {
      pb::Envelope env;
      env.mutable_heartbeat_ack()->set_known(false);
      reply(from, env);
      return;
    }
    WorkerEntry& w = it->second;
    w.last_seen = Clock::now();
    w.malformed = hb.malformed_frames();
    std::set<JobKey> held;
    for (const auto& ref : hb.jobs()) held.insert({ref.session_id(), ref.job_id()});
    const auto settled = Clock::now() - std::chrono::milliseconds(2 * options_.heartbeat_ms + 500);
    std::vector<JobKey> lost;
    for (const auto& key : w.assigned) {
      auto job = jobs_.find(key);
      if (job != jobs_.end() && job->second.worker == hb.worker_id() && job->second.dispatched < settled &&
          !held.count(key))
        lost.push_back(key);
    }
    for (const auto& key : lost) {
      w.assigned.erase(key);
      requeue(key, "lost between tracker and worker");
    }
    if (!lost.empty()) dispatch(w.reg.device_key());
  }

  void on_sync(const std::string& from, const pb::Sync& sync) {
    if (!is_valid_name(sync.session_id()) || sync.outstanding_size() > 1000000) {
      ++malformed_;
      return;
    }
    touch_session(sync.session_id(), from);
    std::set<uint64_t> outstanding(sync.outstanding().begin(), sync.outstanding().end());
    pb::Envelope env;
    auto* out = env.mutable_sync_reply();
    out->set_tracker_instance(instance_);
    for (uint64_t id : outstanding) {
      auto it = jobs_.find({sync.session_id(), id});
      if (it == jobs_.end())
        out->add_unknown(id);
      else if (it->second.state == JobState::kDone && !it->second.cancelled)
        send_result(sync.session_id(), it->second.result);
    }
    // Finished jobs the client no longer waits for are forgotten.
    for (auto it = jobs_.lower_bound({sync.session_id(), 0});
         it != jobs_.end() && it->first.first == sync.session_id();) {
      if (it->second.state == JobState::kDone && !outstanding.count(it->first.second))
        it = jobs_.erase(it);
      else
        ++it;
    }
    reply(from, env);
  }

  void on_cancel(const pb::Cancel& cancel) {
    for (uint64_t id : cancel.job_ids()) {
      auto it = jobs_.find({cancel.session_id(), id});
      if (it == jobs_.end() || it->second.state == JobState::kDone) continue;
      it->second.cancelled = true;
      finish(it->first, it->second, error_result(it->second.job, pb::TIMEOUT, "cancelled by the client"));
    }
  }

  std::string farm_keys() const {
    std::set<std::string> keys;
    for (const auto& [id, w] : workers_) keys.insert(w.reg.device_key());
    if (keys.empty()) return "the farm has no workers";
    std::string text = "the farm has keys: ";
    for (const auto& k : keys) text += (text.back() == ' ' ? "" : ", ") + k;
    return text;
  }

  // A session silent for client_gone_after_ms while it has jobs not done:
  // its client has gone, so its queued jobs are never dispatched and its
  // running ones' results are dropped (as the client's own cancel does).
  void drop_jobs_of_gone_clients(Clock::time_point now) {
    const auto gone = std::chrono::milliseconds(options_.client_gone_after_ms);
    for (auto& [session, entry] : sessions_) {
      if (now - entry.last_seen < gone || entry.swept == entry.last_seen) continue;
      entry.swept = entry.last_seen;  // a job it submits later touches last_seen
      std::vector<JobKey> abandoned;
      for (auto it = jobs_.lower_bound({session, 0}); it != jobs_.end() && it->first.first == session; ++it)
        if (it->second.state != JobState::kDone) abandoned.push_back(it->first);
      if (abandoned.empty()) continue;
      log_.warn("client session %s silent for %d ms: dropping its %zu job(s)", session.c_str(),
                options_.client_gone_after_ms, abandoned.size());
      for (const JobKey& key : abandoned) {
        JobEntry& job = jobs_[key];
        job.cancelled = true;
        finish(key, job, error_result(job.job, pb::TIMEOUT, "the client went away"));
      }
    }
  }

  void housekeeping() {
    const auto now = Clock::now();
    std::vector<std::string> dead;
    for (const auto& [id, w] : workers_)
      if (now - w.last_seen > std::chrono::milliseconds(options_.dead_after_ms)) dead.push_back(id);
    for (const auto& id : dead) {
      auto node = workers_.extract(id);
      ++dead_workers_;
      log_.warn("worker %s is dead (no heartbeat for %d ms); requeueing %zu job(s)", id.c_str(), options_.dead_after_ms,
                node.mapped().assigned.size());
      for (const auto& key : node.mapped().assigned) requeue(key, "worker dead");
      dispatch(node.mapped().reg.device_key());
    }
    // Jobs of a key no worker serves fail after the grace period, counted from
    // their submission or this tracker's start (workers need time to come back).
    const auto grace = std::chrono::milliseconds(options_.no_worker_grace_ms);
    // So do package jobs of a key whose workers all predate package timing.
    for (auto& [device_key, ks] : keys_) {
      if (ks.queued == 0 || now - started_ < grace) continue;
      bool served = false, times = false;
      for (const auto& [id, w] : workers_)
        if (w.reg.device_key() == device_key) {
          served = true;
          times |= times_packages(w.reg);
        }
      if (served && times) continue;
      std::vector<JobKey> expired;
      for (const auto& [session, queue] : ks.queues)
        for (const auto& item : queue) {
          const JobKey key{session, std::get<2>(item)};
          const JobEntry& entry = jobs_[key];
          if ((!served || entry.job.has_package_timing()) && now - entry.submitted >= grace) expired.push_back(key);
        }
      if (!expired.empty())
        log_.warn("no worker %s key %s: %zu job(s) failed after %d ms", served ? "times packages for" : "serves",
                  device_key.c_str(), expired.size(), options_.no_worker_grace_ms);
      for (const auto& key : expired) {
        JobEntry& entry = jobs_[key];
        const std::string why = served ? "no worker of device key '" + device_key +
                                             "' times packages (its workers are older: update tessera-worker)"
                                       : "no worker serves device key '" + device_key + "'; " + farm_keys();
        finish(key, entry, error_result(entry.job, pb::NO_WORKER, why));
      }
    }
    drop_jobs_of_gone_clients(now);
    // Every few seconds: results nobody asked for again within ten minutes
    // are forgotten, and so are sessions silent that long with nothing left.
    if (now < next_gc_) return;
    next_gc_ = now + std::chrono::seconds(5);
    std::set<std::string> active;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->second.state == JobState::kDone && now - it->second.done_at > std::chrono::minutes(10)) {
        it = jobs_.erase(it);
      } else {
        active.insert(it->first.first);
        ++it;
      }
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (!active.count(it->first) && now - it->second.last_seen > std::chrono::minutes(10))
        it = sessions_.erase(it);
      else
        ++it;
    }
  }

  pb::FarmStatus farm_status() {
    pb::FarmStatus st;
    st.set_tracker_instance(instance_);
    st.set_uptime_s(std::chrono::duration<double>(Clock::now() - started_).count());
    std::map<std::string, pb::KeyStatus> keys;
    for (const auto& [id, w] : workers_) {
      auto& k = keys[w.reg.device_key()];
      k.set_workers(k.workers() + 1);
      if (w.assigned.empty())
        k.set_idle(k.idle() + 1);
      else
        k.set_busy(k.busy() + 1);
      bool seen = false;
      for (const auto& t : k.targets()) seen |= t == w.reg.target();
      if (!seen) k.add_targets(w.reg.target());
      st.set_worker_malformed_frames(st.worker_malformed_frames() + w.malformed);
    }
    for (const auto& [device_key, ks] : keys_) {
      auto& k = keys[device_key];
      k.set_queued(static_cast<uint32_t>(ks.queued));
      k.set_done(ks.done);
      k.set_failed(ks.failed);
    }
    for (auto& [name, k] : keys) {
      k.set_key(name);
      *st.add_keys() = k;
    }
    st.set_sessions(static_cast<uint32_t>(sessions_.size()));
    st.set_malformed_frames(malformed_);
    st.set_duplicate_results(duplicates_);
    st.set_requeued_jobs(requeued_);
    st.set_auth_refused(zap_ ? zap_->refused() : 0);
    st.set_dead_workers(dead_workers_);
    st.set_foreign_results(foreign_results_);
    st.set_role_refused(role_refused_);
    return st;
  }

  TrackerOptions options_;
  Context ctx_;  // first member: destroyed last, after the sockets
  Log log_;      // declared before zap_, whose thread writes to it
  std::unique_ptr<ZapHandler> zap_;
  Socket socket_;
  std::string endpoint_, instance_;
  Clock::time_point started_;
  std::map<JobKey, JobEntry> jobs_;
  std::map<std::string, KeyState> keys_;
  std::map<std::string, WorkerEntry> workers_;
  struct SessionEntry {
    std::string routing;
    Clock::time_point last_seen;
    /// The last_seen at which its jobs were last swept for a gone client:
    /// a silent session is swept once, not on every housekeeping tick.
    Clock::time_point swept;
  };
  std::map<std::string, SessionEntry> sessions_;
  Clock::time_point next_gc_;
  uint64_t next_seq_ = 0, malformed_ = 0, duplicates_ = 0, requeued_ = 0, dead_workers_ = 0;
  uint64_t foreign_results_ = 0, role_refused_ = 0;
  size_t active_jobs_ = 0;
  int64_t held_bytes_ = 0;
};

Tracker::Tracker(TrackerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Tracker::~Tracker() = default;
Status Tracker::bind() {
  return impl_->bind();
}
std::string Tracker::endpoint() const {
  return impl_->endpoint();
}
Status Tracker::run(const std::atomic<bool>& stop) {
  return impl_->run(stop);
}

}  // namespace tessera::rpc
