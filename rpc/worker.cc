#include "rpc/worker.h"

#include <unistd.h>
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <tuple>

#include "rpc/handshake.h"
#include "rpc/launcher.h"
#include "rpc/temp_dirs.h"

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// Jobs a worker accepts beyond the ones it runs (the tracker sends max_jobs).
constexpr size_t kMaxPendingJobs = 256;

// Jobs the worker holds, shared with the heartbeat thread.
struct JobBook {
  std::mutex mutex;
  std::vector<pb::JobRef> held;                                 // queued or running
  std::deque<std::pair<Clock::time_point, pb::JobRef>> recent;  // finished lately
};

pb::JobRef ref_of(const pb::Job& job) {
  pb::JobRef ref;
  ref.set_session_id(job.session_id());
  ref.set_job_id(job.job_id());
  return ref;
}

bool same(const pb::JobRef& a, const pb::JobRef& b) {
  return a.job_id() == b.job_id() && a.session_id() == b.session_id();
}

// Counters the worker keeps, shared with the loops below.
struct Counters {
  std::atomic<uint64_t>& jobs_done;
  std::atomic<uint64_t>& malformed;
  std::atomic<uint64_t>& registrations;
};

Status check_options(const WorkerOptions& o) {
  if (!is_valid_name(o.device_key))
    return Status(ErrorCode::kInvalidArgument,
                  "bad device key " + quoted(o.device_key) + " (1-128 of [A-Za-z0-9._:@+-])");
  if (!is_valid_name(o.worker_id)) return Status(ErrorCode::kInvalidArgument, "bad worker id " + quoted(o.worker_id));
  if (o.max_jobs < 1 || o.max_jobs > 256) return Status(ErrorCode::kInvalidArgument, "--max-jobs must be 1-256");
  // Jobs running at once must not share an id.
  if (o.sandbox.job_uid_count > 0 && o.sandbox.job_uid_count < static_cast<uint32_t>(o.max_jobs))
    return Status(ErrorCode::kInvalidArgument, "--job-uids gives " + std::to_string(o.sandbox.job_uid_count) +
                                                   " ids for --max-jobs " + std::to_string(o.max_jobs) +
                                                   ": give at least one a job");
  if (o.security.insecure) TESSERA_RETURN_IF_ERROR(check_insecure_endpoint(o.tracker));
  return Status::ok();
}

// A DEALER socket to the tracker under `routing` ("w:" main, "h:" heartbeats).
// With `watch`, its handshakes are watched (handshake.h).
Result<Socket> connect_dealer(Context& ctx, const WorkerOptions& o, const std::string& routing, HandshakeWatch* watch) {
  TESSERA_ASSIGN_OR_RETURN(Socket s, Socket::create(ctx.get(), ZMQ_DEALER, o.limits.max_frame_bytes()));
  TESSERA_RETURN_IF_ERROR(s.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "ZMQ_ROUTING_ID"));
  TESSERA_RETURN_IF_ERROR(apply_client_security(s, o.security));
  if (watch) {
    TESSERA_ASSIGN_OR_RETURN(*watch, HandshakeWatch::attach(ctx.get(), s, o.tracker, o.security, "worker"));
  }
  TESSERA_RETURN_IF_ERROR(s.connect(o.tracker));
  return s;
}

// One heartbeat: the jobs held, and those finished within three beats (so a
// result lost on the way is noticed by the tracker).
void send_heartbeat(Socket& beat_socket, const WorkerOptions& o, const std::string& incarnation, JobBook& book,
                    uint64_t malformed) {
  pb::Envelope env;
  auto* hb = env.mutable_heartbeat();
  hb->set_worker_id(o.worker_id);
  hb->set_incarnation(incarnation);
  hb->set_malformed_frames(malformed);
  {
    std::lock_guard<std::mutex> lock(book.mutex);
    const auto horizon = Clock::now() - std::chrono::milliseconds(3 * o.heartbeat_ms);
    while (!book.recent.empty() && book.recent.front().first < horizon) book.recent.pop_front();
    hb->set_running_jobs(static_cast<uint32_t>(book.held.size()));
    for (const auto& r : book.held) *hb->add_jobs() = r;
    for (const auto& r : book.recent) *hb->add_jobs() = r.second;
  }
  (void)send_envelope(beat_socket, env);
}

// Heartbeats come from their own thread and socket so that a long
// measurement, or a busy main loop, never looks like a dead worker. An ack
// saying the tracker does not know this worker asks for a new registration.
void heartbeat_loop(Socket& beat_socket, const WorkerOptions& o, const std::string& incarnation, JobBook& book,
                    std::atomic<bool>& need_register, const std::atomic<bool>& beat_stop, const std::atomic<bool>& stop,
                    std::atomic<uint64_t>& malformed) {
  auto next = Clock::now();
  while (!beat_stop && !stop) {
    if (Clock::now() >= next) {
      send_heartbeat(beat_socket, o, incarnation, book, malformed.load());
      next = Clock::now() + std::chrono::milliseconds(o.heartbeat_ms);
    }
    zmq_pollitem_t item = {beat_socket.get(), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 50) > 0) {
      while (auto msg = recv_message(beat_socket)) {
        pb::Envelope env;
        if (msg->frames.size() == 1 && parse_envelope(msg->frames[0], &env) && env.has_heartbeat_ack()) {
          if (!env.heartbeat_ack().known() && !need_register.exchange(true) && o.log)
            o.log->info("the tracker does not know this worker (restarted?): registering again");
        } else {
          malformed.fetch_add(1);
        }
      }
    }
  }
}

// The main thread's loop: registers, takes jobs from the tracker, starts
// them up to max_jobs at a time, and sends each result when its child ends.
class JobLoop {
 public:
  JobLoop(const WorkerOptions& o, const std::string& incarnation, Socket& socket, HandshakeWatch& watch, JobBook& book,
          Counters counters, Launcher* launcher)
      : o_(o),
        incarnation_(incarnation),
        socket_(socket),
        watch_(watch),
        book_(book),
        counters_(counters),
        launcher_(launcher) {}

  /// Serves until `stop`, or until the tracker refuses this worker (then
  /// that refusal, which the caller reports).
  Status run(const std::atomic<bool>& stop, std::atomic<bool>& need_register) {
    while (!stop && refused_.is_ok()) {
      if (!handshake_ok()) return watch_.status();
      if (need_register.exchange(false)) send_registration();
      start_pending();
      std::vector<zmq_pollitem_t> items = poll_items();
      if (zmq_poll(items.data(), static_cast<int>(items.size()), poll_timeout_ms()) < 0 && zmq_errno() != EINTR) break;
      if (items[0].revents & ZMQ_POLLIN) read_messages();
      reap_finished(items);
    }
    return refused_;
  }

  /// Kills what still runs.
  ~JobLoop() { running_.clear(); }

 private:
  // False once the CURVE handshake has failed too often or too long
  // (HandshakeWatch::hopeless: a key problem, retrying would not help).
  bool handshake_ok() {
    const int before = watch_.failures();
    watch_.read();
    if (watch_.failures() > before && o_.log)
      o_.log->warn("handshake %d of %d failed: %s", watch_.failures(), kMaxHandshakeFailures,
                   watch_.status().message().c_str());
    return !watch_.hopeless();
  }

  void send_registration() {
    pb::Envelope env;
    auto* reg = env.mutable_register_();
    reg->set_worker_id(o_.worker_id);
    reg->set_device_key(o_.device_key);
    reg->set_target(o_.target);
    for (const auto& c : o_.capabilities) reg->add_capabilities(c);
    reg->add_capabilities(kTimesPackages);
    reg->set_max_jobs(static_cast<uint32_t>(o_.max_jobs));
    reg->set_incarnation(incarnation_);
    (void)send_envelope(socket_, env);
    counters_.registrations.fetch_add(1);
  }

  void send_result(const pb::Result& r) {
    pb::Envelope env;
    *env.mutable_result() = r;
    (void)send_envelope(socket_, env);  // a lost result is requeued by the tracker
    std::lock_guard<std::mutex> lock(book_.mutex);
    pb::JobRef ref;
    ref.set_session_id(r.session_id());
    ref.set_job_id(r.job_id());
    for (auto it = book_.held.begin(); it != book_.held.end(); ++it)
      if (same(*it, ref)) {
        book_.held.erase(it);
        break;
      }
    book_.recent.emplace_back(Clock::now(), ref);
  }

  void start_pending() {
    while (!pending_.empty() && static_cast<int>(running_.size()) < o_.max_jobs) {
      pb::Job job = std::move(pending_.front());
      pending_.pop_front();
      auto m = Measurement::start(job, options_for_job(o_.sandbox, jobs_started_++), launcher_);
      if (launcher_ && !launcher_->alive()) {
        if (o_.log) o_.log->warn("the launcher process is gone: jobs are forked by the worker itself from now on");
        launcher_ = nullptr;
      }
      if (!m.is_ok()) {
        // No child to measure in (fork, pipe, the job's directory): the
        // worker's failure, measured again elsewhere or later.
        send_result(error_result(job, pb::SANDBOX_ERROR, m.status().message(), o_.worker_id));
        continue;
      }
      running_.push_back(std::move(m).value());
    }
  }

  // The tracker's socket first, then one child pipe per running job.
  std::vector<zmq_pollitem_t> poll_items() {
    std::vector<zmq_pollitem_t> items;
    items.push_back({socket_.get(), 0, ZMQ_POLLIN, 0});
    for (auto& m : running_) items.push_back({nullptr, m.fd(), ZMQ_POLLIN, 0});
    return items;
  }

  // At most 100 ms, and no later than the first deadline.
  long poll_timeout_ms() const {
    long timeout_ms = 100;
    const auto now = Clock::now();
    for (const auto& m : running_) {
      const long left = std::chrono::duration_cast<std::chrono::milliseconds>(m.deadline() - now).count() + 1;
      timeout_ms = std::max(0L, std::min(timeout_ms, left));
    }
    return timeout_ms;
  }

  void read_messages() {
    while (auto msg = recv_message(socket_)) {
      pb::Envelope env;
      if (msg->frames.size() != 1 || msg->truncated || !parse_envelope(msg->frames[0], &env)) {
        counters_.malformed.fetch_add(1);
        continue;
      }
      if (env.has_dispatch()) {
        accept_job(std::move(*env.mutable_dispatch()));
      } else if (env.has_refused()) {
        refused_ = Status(ErrorCode::kUnavailable, env.refused().reason().substr(0, 1024));
      } else if (!env.has_register_ack()) {
        counters_.malformed.fetch_add(1);
      }
    }
  }

  // Queues a dispatched job, or answers at once with a protocol error.
  void accept_job(pb::Job job) {
    Status valid = validate_job(job, o_.limits);
    if (!valid.is_ok()) {
      counters_.malformed.fetch_add(1);
      if (o_.log) o_.log->warn("refused a job: %s", valid.message().c_str());
      if (is_valid_name(job.session_id()))
        send_result(error_result(job, pb::PROTOCOL_ERROR, valid.message(), o_.worker_id));
      return;
    }
    if (pending_.size() >= kMaxPendingJobs) {  // a tracker never sends this many; refuse, stay bounded
      send_result(error_result(job, pb::PROTOCOL_ERROR, "the worker's queue is full", o_.worker_id));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(book_.mutex);
      book_.held.push_back(ref_of(job));
    }
    pending_.push_back(std::move(job));
  }

  // Sends the result of every job whose child finished or ran out of time.
  void reap_finished(const std::vector<zmq_pollitem_t>& items) {
    size_t index = 1;
    const auto after = Clock::now();
    for (auto it = running_.begin(); it != running_.end(); ++index) {
      bool done = (items[index].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && it->on_readable();
      if (!done && after >= it->deadline()) {
        it->kill_for_timeout();  // finish() reaps it
        done = true;
      }
      if (done) {
        send_result(it->finish());
        counters_.jobs_done.fetch_add(1);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const WorkerOptions& o_;
  const std::string& incarnation_;
  Socket& socket_;
  HandshakeWatch& watch_;
  JobBook& book_;
  Counters counters_;
  Launcher* launcher_;         // forks the jobs' children; null: this process does
  uint64_t jobs_started_ = 0;  // each job's identity (options_for_job)
  std::deque<pb::Job> pending_;
  std::list<Measurement> running_;
  Status refused_;
};

}  // namespace

Worker::Worker(WorkerOptions options) : options_(std::move(options)) {
  if (options_.worker_id.empty()) {
    char host[256] = "worker";
    ::gethostname(host, sizeof host - 1);
    options_.worker_id = std::string(host) + "-" + std::to_string(::getpid());
  }
}

WorkerStats Worker::stats() const {
  return WorkerStats{jobs_done_.load(), malformed_.load(), registrations_.load()};
}

Status Worker::run(const std::atomic<bool>& stop) {
  TESSERA_RETURN_IF_ERROR(check_options(options_));
  options_.sandbox.worker_id = options_.worker_id;
  // Said once, at start: what this machine does not let the sandbox do.
  const std::string no_netns = probe_network_isolation();
  const std::string no_filter = probe_system_call_filter();
  options_.sandbox.isolate_network = no_netns.empty();
  options_.sandbox.filter_system_calls = no_filter.empty();
  // A root worker's jobs each run as an id of their own.
  if (::geteuid() == 0 && options_.sandbox.job_uid_count == 0)
    std::tie(options_.sandbox.job_uid_first, options_.sandbox.job_uid_count) = default_job_uids(options_.worker_id);
  // One namespace for every job (a root worker's): made once, it spares
  // each job the making and the kernel's slow teardown of its own. Closed
  // when the run ends.
  struct OwnNamespace {
    SandboxOptions& options;
    bool made = false;
    ~OwnNamespace() {
      if (!made) return;
      ::close(options.network_namespace);
      options.network_namespace = -1;
    }
  } own_namespace{options_.sandbox};
  if (options_.sandbox.isolate_network && options_.sandbox.network_namespace < 0) {
    if (Result<int> ns = make_network_namespace(); ns.is_ok()) {
      options_.sandbox.network_namespace = *ns;
      own_namespace.made = true;
    }
  }
  if (!no_filter.empty() && options_.log)
    options_.log->warn("jobs run without a system-call filter (%s)", no_filter.c_str());
  if (!no_netns.empty() && options_.log)
    options_.log->warn("jobs run without a network namespace (%s)%s", no_netns.c_str(),
                       no_filter.empty() ? ": the system-call filter alone keeps them off the network" : "");
  // Jobs get their directories inside one of this worker's own, removed at
  // the end; those of workers killed with -9 are removed here (temp_dirs.h).
  const std::string temp_base = options_.sandbox.temp_dir;
  const int stale = remove_stale_dirs(temp_base, "tessera-worker");
  if (stale > 0 && options_.log)
    options_.log->info("removed %d directory(ies) of dead workers in %s", stale, temp_base.c_str());
  TESSERA_ASSIGN_OR_RETURN(const std::string own_dir, make_owned_dir(temp_base, "tessera-worker"));
  options_.sandbox.temp_dir = own_dir;
  Status result = serve(stop);
  remove_tree(own_dir);
  options_.sandbox.temp_dir = temp_base;
  return result;
}

Status Worker::serve(const std::atomic<bool>& stop) {
  const std::string incarnation = random_hex(8);
  // Before ZeroMQ's threads: the jobs' children are forked from a process
  // that is still this one as it is now (launcher.h).
  Result<std::unique_ptr<Launcher>> launcher = start_measurement_launcher();
  if (!launcher.is_ok() && options_.log)
    options_.log->info("jobs are forked by the worker itself: %s", launcher.status().message().c_str());

  Context ctx;
  Socket main_socket;
  HandshakeWatch watch;  // after main_socket: stops monitoring before it closes
  TESSERA_ASSIGN_OR_RETURN(main_socket, connect_dealer(ctx, options_, "w:" + options_.worker_id, &watch));
  TESSERA_ASSIGN_OR_RETURN(Socket beat_socket, connect_dealer(ctx, options_, "h:" + options_.worker_id, nullptr));

  JobBook book;
  std::atomic<bool> need_register{true};
  std::atomic<bool> beat_stop{false};
  std::thread beater(
      [&] { heartbeat_loop(beat_socket, options_, incarnation, book, need_register, beat_stop, stop, malformed_); });
  Status result;
  {
    JobLoop loop(options_, incarnation, main_socket, watch, book, Counters{jobs_done_, malformed_, registrations_},
                 launcher.is_ok() ? launcher->get() : nullptr);
    result = loop.run(stop, need_register);
    beat_stop = true;
    beater.join();
  }  // the loop's destructor kills what still runs
  return result;
}

}  // namespace tessera::rpc
