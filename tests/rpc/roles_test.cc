// Issue 19, roles and provenance: a client key cannot register as a worker, a
// worker key cannot submit, and a result counts only from the worker the job
// was given to. Real tracker and worker processes on ipc:// and loopback.
#include <zmq.h>

#include <cstdio>

#include "rpc/keys.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

// Runs a shell command; its exit code, with stdout+stderr in `out`.
int run_command(const std::string& command, std::string* out) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A tracker's key folder with one worker key (workers/) and one client key (clients/).
struct RoleKeys {
  CurveKeyPair tracker, worker, client;
  explicit RoleKeys(const std::string& dir) {
    tracker = generate_keypair().value();
    worker = generate_keypair().value();
    client = generate_keypair().value();
    EXPECT_TRUE(write_keypair(dir, "tracker", tracker).is_ok());
    EXPECT_TRUE(::mkdir((dir + "/auth").c_str(), 0700) == 0);
    EXPECT_TRUE(write_keypair(dir + "/auth/workers", "w", worker, KeyRole::kWorker).is_ok());
    EXPECT_TRUE(write_keypair(dir + "/auth/clients", "c", client, KeyRole::kClient).is_ok());
  }
  SecurityOptions as(const CurveKeyPair& own) const {
    SecurityOptions s;
    s.own = own;
    s.server_public_z85 = tracker.public_z85;
    return s;
  }
};

TrackerOptions curve_tracker(const RoleKeys& keys, const std::string& dir) {
  TrackerOptions o;
  o.bind = "ipc://" + dir + "/t";
  o.security.own = keys.tracker;
  o.authorized = load_authorized_keys(dir + "/auth").value();
  o.heartbeat_ms = 200;
  return o;
}

TEST(Roles, FoldersAndRoleLinesGiveEachKeyItsRole) {
  TempDir dir;
  RoleKeys keys(dir.path());
  auto legacy = generate_keypair().value();
  ASSERT_TRUE(write_keypair(dir.path() + "/auth", "old", legacy).is_ok());
  auto loaded = load_authorized_keys(dir.path() + "/auth");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->size(), 3u);
  EXPECT_EQ(loaded->at(keys.worker.public_z85), KeyRole::kWorker);
  EXPECT_EQ(loaded->at(keys.client.public_z85), KeyRole::kClient);
  EXPECT_EQ(loaded->at(legacy.public_z85), KeyRole::kAny);
  EXPECT_EQ(load_key_role(dir.path() + "/auth/workers/w.key").value(), KeyRole::kWorker);

  // A worker key filed among the clients contradicts itself.
  ASSERT_EQ(std::system(("cp " + dir.path() + "/auth/workers/w.pub " + dir.path() + "/auth/clients/").c_str()), 0);
  auto wrong = load_authorized_keys(dir.path() + "/auth");
  EXPECT_EQ(wrong.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("w.pub"), std::string::npos) << wrong.status().message();

  // One file: "worker = KEY", "client = KEY", or a bare key (either role).
  std::ofstream(dir.path() + "/list") << "worker = " << keys.worker.public_z85
                                      << "\nclient = " << keys.client.public_z85 << "\n"
                                      << legacy.public_z85 << "\n";
  auto list = load_authorized_keys(dir.path() + "/list");
  ASSERT_TRUE(list.is_ok()) << list.status().to_string();
  EXPECT_EQ(list->at(keys.worker.public_z85), KeyRole::kWorker);
  EXPECT_EQ(list->at(keys.client.public_z85), KeyRole::kClient);
  EXPECT_EQ(list->at(legacy.public_z85), KeyRole::kAny);
  std::ofstream(dir.path() + "/twice") << "worker = " << keys.worker.public_z85
                                       << "\nclient = " << keys.worker.public_z85 << "\n";
  EXPECT_EQ(load_authorized_keys(dir.path() + "/twice").status().code(), ErrorCode::kInvalidArgument);
}

TEST(Roles, ClientKeyRegisteringAsWorkerIsRefusedAndTheWorkerExits) {
  TempDir dir;
  RoleKeys keys(dir.path());
  ASSERT_TRUE(write_keypair(dir.path() + "/own", "c", keys.client, KeyRole::kClient).is_ok());
  TrackerThread tracker(curve_tracker(keys, dir.path()));
  ASSERT_TRUE(tracker.status().is_ok()) << tracker.status().to_string();
  std::string out;
  const int code = run_command("timeout 20 " + bin_dir() + "/tessera-worker --tracker " + tracker.endpoint() +
                                   " --key k --id intruder --heartbeat-ms 200 --keyfile " + dir.path() +
                                   "/own/c.key --tracker-key " + dir.path() + "/tracker.pub",
                               &out);
  EXPECT_EQ(code, 1) << out;  // not 124: it stopped by itself
  EXPECT_NE(out.find("is a client key"), std::string::npos) << out;
  auto st = query_farm_status(tracker.endpoint(), keys.as(keys.client));
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  EXPECT_EQ(st->keys_size(), 0);  // never registered, so 0 jobs received
  EXPECT_GE(st->role_refused(), 1u);
}

TEST(Roles, WorkerKeySubmittingIsRefusedAndTheRealWorkerServesTheClient) {
  TempDir dir;
  RoleKeys keys(dir.path());
  TrackerThread tracker(curve_tracker(keys, dir.path()));
  ASSERT_TRUE(tracker.status().is_ok()) << tracker.status().to_string();
  auto worker =
      start_worker(tracker.endpoint(), "k", "w1",
                   {"--keyfile", dir.path() + "/auth/workers/w.key", "--tracker-key", dir.path() + "/tracker.pub"});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), keys.as(keys.client), 1));

  RpcRunnerOptions as_worker;
  as_worker.tracker = tracker.endpoint();
  as_worker.security = keys.as(keys.worker);
  as_worker.device_key = "k";
  auto bad = RpcRunner::connect(as_worker);
  ASSERT_TRUE(bad.is_ok());
  auto refused = (*bad)->run({kernel_input("add_one")});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("is a worker key"), std::string::npos) << refused.status().message();

  RpcRunnerOptions as_client = as_worker;
  as_client.security = keys.as(keys.client);
  auto good = RpcRunner::connect(as_client);
  ASSERT_TRUE(good.is_ok());
  auto served = (*good)->run({kernel_input("add_one")});
  ASSERT_TRUE(served.is_ok()) << served.status().to_string();
  ASSERT_TRUE((*served)[0].ok()) << (*served)[0].message;
  EXPECT_EQ((*served)[0].worker_id, "w1");
  EXPECT_EQ((*served)[0].worker_public_key, keys.worker.public_z85);
  auto st = query_farm_status(tracker.endpoint(), keys.as(keys.client));
  ASSERT_TRUE(st.is_ok());
  EXPECT_EQ(st->keys(0).done() + st->keys(0).failed(), 1u);  // the worker key's job never ran
  EXPECT_GE(st->role_refused(), 1u);
}

// A raw peer on the worker socket: registers as `id` for `key`, then sends `result`.
void forge(const std::string& endpoint, const std::string& id, const std::string& key, const pb::Result& result) {
  Context ctx;
  Socket s = Socket::create(ctx.get(), ZMQ_DEALER, 1 << 20).value();
  const std::string routing = "w:" + id;
  ASSERT_TRUE(s.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "id").is_ok());
  ASSERT_TRUE(s.connect(endpoint).is_ok());
  pb::Envelope reg;
  reg.mutable_register_()->set_worker_id(id);
  reg.mutable_register_()->set_device_key(key);
  reg.mutable_register_()->set_target("llvm");
  reg.mutable_register_()->set_max_jobs(1);
  reg.mutable_register_()->set_incarnation("forger");
  ASSERT_TRUE(send_envelope(s, reg).is_ok());
  pb::Envelope env;
  *env.mutable_result() = result;
  ASSERT_TRUE(send_envelope(s, env).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

TEST(Provenance, ForgedResultFromAWorkerNotGivenTheJobIsDroppedAndCounted) {
  TempDir dir;
  TrackerOptions o = fast_tracker(dir.path());
  TrackerThread tracker(o);
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "honest");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  ClientOptions co;
  co.tracker = tracker.endpoint();
  co.security = plaintext();
  auto client = RpcClient::connect(co);
  ASSERT_TRUE(client.is_ok());
  const uint64_t id = (*client)->submit(kernel_input("sleep_200ms"), "k");
  // Forge only once the honest worker has the job: a result for a job still
  // queued (or already done) is dropped as a duplicate, not as foreign.
  bool given = false;
  for (int i = 0; i < 200 && !given; ++i) {
    auto st = query_farm_status(tracker.endpoint(), plaintext());
    ASSERT_TRUE(st.is_ok());
    for (const pb::KeyStatus& k : st->keys()) given = given || (k.key() == "k" && k.busy() == 1);
    if (!given) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(given) << "the honest worker never took the job";

  pb::Result fake;
  fake.set_job_id(id);
  fake.set_session_id((*client)->session_id());
  fake.set_error(pb::OK);
  for (int i = 0; i < 3; ++i) fake.add_costs_s(1e-9);
  fake.set_worker_id("honest");  // a claimed name changes nothing: the sender is who it is
  forge(tracker.endpoint(), "forger", "other-key", fake);

  auto results = collect(**client, 1, 10000);
  ASSERT_EQ(results.size(), 1u);
  const MeasureResult& r = results[0].second;
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.worker_id, "honest");
  EXPECT_GT(r.mean_cost(), 0.1);  // the real 200 ms, not the forged 1 ns
  auto st = query_farm_status(tracker.endpoint(), plaintext());
  ASSERT_TRUE(st.is_ok());
  EXPECT_EQ(st->foreign_results(), 1u);
  EXPECT_NE(format_farm_status(*st).find("foreign results dropped: 1"), std::string::npos) << format_farm_status(*st);
}

}  // namespace
}  // namespace tessera::rpc
