// 10,000 random, truncated and oversized frames at the tracker and at a
// worker: each is dropped and counted, and both still serve afterwards.
#include <sys/stat.h>
#include <zmq.h>

#include <random>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

constexpr int kFrames = 10000;

// A valid job envelope, to truncate and corrupt.
std::string valid_frame(pb::Envelope env) {
  env.set_protocol_version(kProtocolVersion);
  return env.SerializeAsString();
}

// The i-th hostile frame: random bytes, a truncated or bit-flipped valid
// envelope, another protocol version, or an empty frame.
std::string hostile_frame(std::mt19937_64& rng, const std::string& valid, int i) {
  switch (i % 5) {
    case 0: {
      std::string s(rng() % 512, '\0');
      for (auto& c : s) c = static_cast<char>(rng());
      return s;
    }
    case 1: return valid.substr(0, rng() % valid.size());
    case 2: {
      std::string s = valid;
      // The envelope's structure: ids, names, lengths and the library's ELF header.
      for (int k = 0; k < 4; ++k) s[rng() % 48] ^= static_cast<char>(1 << (rng() % 8));
      return s;
    }
    case 3: {
      pb::Envelope env;
      env.ParseFromString(valid);
      env.set_protocol_version(99);
      return env.SerializeAsString();
    }
    default: return "";
  }
}

pb::Job job_for(const MeasureInput& in, uint64_t id) {
  pb::Job job = to_wire_job(in);
  job.set_job_id(id);
  job.set_session_id("fuzz");
  job.set_device_key("k");
  job.set_attempt(1);
  return job;
}

TEST(Fuzz, TrackerDropsAndCountsHostileFramesAndStillServes) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));

  Context ctx;
  auto attacker = Socket::create(ctx.get(), ZMQ_DEALER, 64 << 20);
  ASSERT_TRUE(attacker.is_ok());
  ASSERT_TRUE(attacker->set_int(ZMQ_SNDHWM, 0, "ZMQ_SNDHWM").is_ok());
  ASSERT_TRUE(attacker->connect(tracker.endpoint()).is_ok());
  pb::Envelope env;
  *env.mutable_submit() = job_for(kernel_input("add_one"), 1);
  const std::string valid = valid_frame(env);
  std::mt19937_64 rng(7);
  uint64_t expected = 0;  // frames that are not a valid request (a few bit flips still are)
  for (int i = 0; i < kFrames; ++i) {
    std::string frame = hostile_frame(rng, valid, i);
    pb::Envelope parsed;
    if (i % 97 == 1) {
      // joined to the previous frame: one three-frame message, counted there
    } else if (i % 97 == 0 || !parse_envelope(frame, &parsed) ||
               (parsed.has_submit() && !validate_job(parsed.submit(), WireLimits()).is_ok()))
      ++expected;
    ASSERT_GE(zmq_send(attacker->get(), frame.data(), frame.size(), i % 97 == 0 ? ZMQ_SNDMORE : 0), 0);
  }
  zmq_send(attacker->get(), "end", 3, 0);  // closes the last multi-frame message

  // Every frame reached the tracker and was counted (a few random ones parse
  // into harmless requests, e.g. a heartbeat of an unknown worker).
  EXPECT_GE(expected, static_cast<uint64_t>(kFrames * 9 / 10));
  uint64_t malformed = 0;
  for (int i = 0; i < 200 && malformed < expected; ++i) {
    auto st = query_farm_status(tracker.endpoint(), plaintext());
    ASSERT_TRUE(st.is_ok());
    malformed = st->malformed_frames();
    if (malformed < expected) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(malformed, expected);

  RpcRunnerOptions o;
  o.tracker = tracker.endpoint();
  o.security = plaintext();
  o.device_key = "k";
  auto runner = RpcRunner::connect(o);
  ASSERT_TRUE(runner.is_ok());
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  auto results = (*runner)->run({in});
  ASSERT_TRUE(results.is_ok());
  EXPECT_TRUE((*results)[0].ok()) << (*results)[0].message;
  EXPECT_TRUE(worker->alive());
}

TEST(Fuzz, WorkerDropsAndCountsHostileFramesAndStillServes) {
  TempDir dir;
  // The test is the worker's tracker: a bare ROUTER that speaks the protocol by hand.
  Context ctx;
  auto router = Socket::create(ctx.get(), ZMQ_ROUTER, 512 << 20);
  ASSERT_TRUE(router.is_ok());
  ASSERT_TRUE(router->set_int(ZMQ_SNDHWM, 0, "ZMQ_SNDHWM").is_ok());
  const std::string endpoint = "ipc://" + dir.path() + "/fake-tracker";
  ASSERT_TRUE(router->bind(endpoint).is_ok());
  const std::string scratch = dir.path() + "/scratch";
  ASSERT_EQ(::mkdir(scratch.c_str(), 0700), 0);
  auto worker = start_worker(endpoint, "k", "w1", {"--temp-dir", scratch});

  auto receive = [&](int timeout_ms, auto&& want) -> std::optional<pb::Envelope> {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < until) {
      zmq_pollitem_t item = {router->get(), 0, ZMQ_POLLIN, 0};
      zmq_poll(&item, 1, 50);
      while (auto msg = recv_message(*router)) {
        pb::Envelope env;
        if (msg->frames.size() == 2 && parse_envelope(msg->frames[1], &env) && want(env)) return env;
      }
    }
    return std::nullopt;
  };
  auto reg = receive(5000, [](const pb::Envelope& e) { return e.has_register_(); });
  ASSERT_TRUE(reg.has_value());
  EXPECT_EQ(reg->register_().worker_id(), "w1");

  pb::Envelope env;
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  *env.mutable_dispatch() = job_for(in, 1);
  const std::string valid = valid_frame(env);
  std::mt19937_64 rng(11);
  const std::string routing = "w:w1";
  int runnable = 0;  // bit flips that still make a valid job: the worker answers each
  for (int i = 0; i < kFrames; ++i) {
    std::string frame = hostile_frame(rng, valid, i);
    pb::Envelope parsed;
    if (parse_envelope(frame, &parsed) && parsed.has_dispatch() &&
        validate_job(parsed.dispatch(), WireLimits()).is_ok())
      ++runnable;
    ASSERT_GE(zmq_send(router->get(), routing.data(), routing.size(), ZMQ_SNDMORE), 0);
    ASSERT_GE(zmq_send(router->get(), frame.data(), frame.size(), 0), 0);
  }
  // Each runnable one is measured (most crash on a corrupt ELF header) or,
  // past the worker's bounded queue, refused; wait for all those answers.
  int answered = 0;
  while (answered < runnable && receive(30000, [](const pb::Envelope& e) { return e.has_result(); })) ++answered;
  EXPECT_EQ(answered, runnable);
  // Then a real job: the worker still measures it.
  pb::Envelope good;
  *good.mutable_dispatch() = job_for(in, 12345);
  ASSERT_TRUE(send_envelope(*router, good, routing).is_ok());
  auto result = receive(20000, [](const pb::Envelope& e) { return e.has_result() && e.result().job_id() == 12345; });
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->result().error(), pb::OK) << result->result().message();
  EXPECT_TRUE(worker->alive());
  // The worker reports what it dropped in its heartbeats.
  auto beat = receive(
      3000, [](const pb::Envelope& e) { return e.has_heartbeat() && e.heartbeat().malformed_frames() >= kFrames / 2; });
  EXPECT_TRUE(beat.has_value());
  // Libraries that killed the dynamic loader left no files behind: the
  // scratch folder holds the worker's own directory (rpc/temp_dirs.h), with
  // no job directory left in it.
  const std::string own = scratch + "/tessera-worker-" + std::to_string(worker->pid()) + "-*";
  EXPECT_EQ(::system(("test \"$(ls -A " + scratch + " | wc -l)\" = 1 && test -d " + own + " && test -z \"$(ls -A " +
                      own + ")\"")
                         .c_str()),
            0)
      << "files left in " << scratch;
}

}  // namespace
}  // namespace tessera::rpc
