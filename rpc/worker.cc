#include "rpc/worker.h"

#include <unistd.h>
#include <zmq.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <list>
#include <mutex>
#include <thread>

namespace tessera::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// Jobs a worker accepts beyond the ones it runs (the tracker sends max_jobs).
constexpr size_t kMaxPendingJobs = 256;

// Jobs the worker holds, shared with the heartbeat thread.
struct JobBook {
  std::mutex mutex;
  std::vector<pb::JobRef> held;                             // queued or running
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
  if (!is_valid_name(options_.device_key))
    return Status(ErrorCode::kInvalidArgument, "bad device key '" + options_.device_key + "' (1-128 of [A-Za-z0-9._:@+-])");
  if (!is_valid_name(options_.worker_id))
    return Status(ErrorCode::kInvalidArgument, "bad worker id '" + options_.worker_id + "'");
  if (options_.max_jobs < 1 || options_.max_jobs > 256)
    return Status(ErrorCode::kInvalidArgument, "--max-jobs must be 1-256");
  if (options_.security.insecure) TESSERA_RETURN_IF_ERROR(check_insecure_endpoint(options_.tracker));
  options_.sandbox.worker_id = options_.worker_id;
  const std::string incarnation = random_hex(8);

  Context ctx;
  auto make_socket = [&](const std::string& routing) -> Result<Socket> {
    TESSERA_ASSIGN_OR_RETURN(Socket s, Socket::create(ctx.get(), ZMQ_DEALER, options_.limits.max_frame_bytes()));
    TESSERA_RETURN_IF_ERROR(s.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "ZMQ_ROUTING_ID"));
    TESSERA_RETURN_IF_ERROR(apply_client_security(s, options_.security));
    TESSERA_RETURN_IF_ERROR(s.connect(options_.tracker));
    return s;
  };
  TESSERA_ASSIGN_OR_RETURN(Socket main_socket, make_socket("w:" + options_.worker_id));
  TESSERA_ASSIGN_OR_RETURN(Socket beat_socket, make_socket("h:" + options_.worker_id));

  JobBook book;
  std::atomic<bool> need_register{true};
  std::atomic<bool> beat_stop{false};
  // Heartbeats come from their own thread and socket so that a long
  // measurement, or a busy main loop, never looks like a dead worker.
  std::thread beater([&] {
    auto next = Clock::now();
    while (!beat_stop && !stop) {
      if (Clock::now() >= next) {
        pb::Envelope env;
        auto* hb = env.mutable_heartbeat();
        hb->set_worker_id(options_.worker_id);
        hb->set_incarnation(incarnation);
        hb->set_malformed_frames(malformed_.load());
        {
          std::lock_guard<std::mutex> lock(book.mutex);
          const auto horizon = Clock::now() - std::chrono::milliseconds(3 * options_.heartbeat_ms);
          while (!book.recent.empty() && book.recent.front().first < horizon) book.recent.pop_front();
          hb->set_running_jobs(static_cast<uint32_t>(book.held.size()));
          for (const auto& r : book.held) *hb->add_jobs() = r;
          for (const auto& r : book.recent) *hb->add_jobs() = r.second;
        }
        (void)send_envelope(beat_socket, env);
        next = Clock::now() + std::chrono::milliseconds(options_.heartbeat_ms);
      }
      zmq_pollitem_t item = {beat_socket.get(), 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 50) > 0) {
        while (auto msg = recv_message(beat_socket)) {
          pb::Envelope env;
          if (msg->frames.size() == 1 && parse_envelope(msg->frames[0], &env) && env.has_heartbeat_ack()) {
            if (!env.heartbeat_ack().known()) need_register = true;
          } else {
            malformed_.fetch_add(1);
          }
        }
      }
    }
  });

  std::deque<pb::Job> pending;
  std::list<Measurement> running;
  auto send_result = [&](const pb::Result& r) {
    pb::Envelope env;
    *env.mutable_result() = r;
    (void)send_envelope(main_socket, env);  // a lost result is requeued by the tracker
    std::lock_guard<std::mutex> lock(book.mutex);
    pb::JobRef ref;
    ref.set_session_id(r.session_id());
    ref.set_job_id(r.job_id());
    for (auto it = book.held.begin(); it != book.held.end(); ++it)
      if (same(*it, ref)) {
        book.held.erase(it);
        break;
      }
    book.recent.emplace_back(Clock::now(), ref);
  };

  while (!stop) {
    if (need_register.exchange(false)) {
      pb::Envelope env;
      auto* reg = env.mutable_register_();
      reg->set_worker_id(options_.worker_id);
      reg->set_device_key(options_.device_key);
      reg->set_target(options_.target);
      for (const auto& c : options_.capabilities) reg->add_capabilities(c);
      reg->set_max_jobs(static_cast<uint32_t>(options_.max_jobs));
      reg->set_incarnation(incarnation);
      (void)send_envelope(main_socket, env);
      registrations_.fetch_add(1);
    }
    while (!pending.empty() && static_cast<int>(running.size()) < options_.max_jobs) {
      pb::Job job = std::move(pending.front());
      pending.pop_front();
      auto m = Measurement::start(job, options_.sandbox);
      if (!m.is_ok()) {
        send_result(error_result(job, pb::RUNTIME_ERROR, m.status().message(), options_.worker_id));
        continue;
      }
      running.push_back(std::move(m).value());
    }

    std::vector<zmq_pollitem_t> items;
    items.push_back({main_socket.get(), 0, ZMQ_POLLIN, 0});
    long timeout_ms = 100;
    const auto now = Clock::now();
    for (auto& m : running) {
      items.push_back({nullptr, m.fd(), ZMQ_POLLIN, 0});
      const long left = std::chrono::duration_cast<std::chrono::milliseconds>(m.deadline() - now).count() + 1;
      timeout_ms = std::max(0L, std::min(timeout_ms, left));
    }
    if (zmq_poll(items.data(), static_cast<int>(items.size()), timeout_ms) < 0 && zmq_errno() != EINTR) break;

    if (items[0].revents & ZMQ_POLLIN) {
      while (auto msg = recv_message(main_socket)) {
        pb::Envelope env;
        if (msg->frames.size() != 1 || msg->truncated || !parse_envelope(msg->frames[0], &env)) {
          malformed_.fetch_add(1);
          continue;
        }
        if (env.has_dispatch()) {
          Status valid = validate_job(env.dispatch(), options_.limits);
          if (!valid.is_ok()) {
            malformed_.fetch_add(1);
            if (is_valid_name(env.dispatch().session_id()))
              send_result(error_result(env.dispatch(), pb::PROTOCOL_ERROR, valid.message(), options_.worker_id));
            continue;
          }
          if (pending.size() >= kMaxPendingJobs) {  // a tracker never sends this many; refuse, stay bounded
            send_result(error_result(env.dispatch(), pb::PROTOCOL_ERROR, "the worker's queue is full",
                                     options_.worker_id));
            continue;
          }
          {
            std::lock_guard<std::mutex> lock(book.mutex);
            book.held.push_back(ref_of(env.dispatch()));
          }
          pending.push_back(std::move(*env.mutable_dispatch()));
        } else if (!env.has_register_ack()) {
          malformed_.fetch_add(1);
        }
      }
    }
    size_t index = 1;
    const auto after = Clock::now();
    for (auto it = running.begin(); it != running.end(); ++index) {
      bool done = (items[index].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) && it->on_readable();
      if (!done && after >= it->deadline()) {
        it->kill_for_timeout();  // finish() reaps it
        done = true;
      }
      if (done) {
        send_result(it->finish());
        jobs_done_.fetch_add(1);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  }
  beat_stop = true;
  beater.join();
  running.clear();  // kills what still runs
  return Status::ok();
}

}  // namespace tessera::rpc
