// CURVE: unknown keys are refused before any job reaches a worker; plaintext
// only on loopback and ipc; key files are private.
#include <sys/stat.h>

#include "rpc/keys.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

struct Keys {
  CurveKeyPair tracker, worker, client, stranger;
};

Keys make_keys(const std::string& dir) {
  Keys k;
  k.tracker = generate_keypair().value();
  k.worker = generate_keypair().value();
  k.client = generate_keypair().value();
  k.stranger = generate_keypair().value();
  EXPECT_TRUE(write_keypair(dir, "tracker", k.tracker).is_ok());
  EXPECT_TRUE(write_keypair(dir + "/authorized", "worker", k.worker).is_ok());
  EXPECT_TRUE(write_keypair(dir + "/authorized", "client", k.client).is_ok());
  EXPECT_TRUE(write_keypair(dir + "/strangers", "stranger", k.stranger).is_ok());
  return k;
}

SecurityOptions as(const CurveKeyPair& own, const CurveKeyPair& tracker) {
  SecurityOptions s;
  s.own = own;
  s.server_public_z85 = tracker.public_z85;
  return s;
}

TEST(Security, UnknownClientIsRefusedBeforeAnyJobRuns) {
  TempDir dir;
  Keys keys = make_keys(dir.path());
  TrackerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.security.own = keys.tracker;
  auto authorized = load_authorized_keys(dir.path() + "/authorized");
  ASSERT_TRUE(authorized.is_ok()) << authorized.status().to_string();
  EXPECT_EQ(authorized->size(), 2u);
  o.authorized = *authorized;
  o.heartbeat_ms = 200;
  TrackerThread tracker(o);
  ASSERT_TRUE(tracker.status().is_ok()) << tracker.status().to_string();
  auto worker =
      start_worker(tracker.endpoint(), "k", "w1",
                   {"--keyfile", dir.path() + "/authorized/worker.key", "--tracker-key", dir.path() + "/tracker.pub"});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), as(keys.client, keys.tracker), 1));

  RpcRunnerOptions bad;
  bad.tracker = tracker.endpoint();
  bad.security = as(keys.stranger, keys.tracker);
  bad.device_key = "k";
  auto stranger = RpcRunner::connect(bad);
  ASSERT_TRUE(stranger.is_ok());
  auto refused = (*stranger)->run({kernel_input("add_one")});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("refused"), std::string::npos) << refused.status().message();

  // The owner's client is served, and the stranger's job never ran.
  RpcRunnerOptions good = bad;
  good.security = as(keys.client, keys.tracker);
  auto owner = RpcRunner::connect(good);
  ASSERT_TRUE(owner.is_ok());
  auto served = (*owner)->run({kernel_input("add_one")});
  ASSERT_TRUE(served.is_ok()) << served.status().to_string();
  EXPECT_TRUE((*served)[0].ok()) << (*served)[0].message;
  auto st = query_farm_status(tracker.endpoint(), as(keys.client, keys.tracker));
  ASSERT_TRUE(st.is_ok());
  EXPECT_EQ(st->keys(0).done() + st->keys(0).failed(), 1u);
  EXPECT_GE(st->auth_refused(), 1u);
}

TEST(Security, UnknownWorkerCannotRegister) {
  TempDir dir;
  Keys keys = make_keys(dir.path());
  TrackerOptions o;
  o.bind = "tcp://127.0.0.1:*";
  o.security.own = keys.tracker;
  o.authorized = {{keys.client.public_z85, KeyRole::kAny}};
  TrackerThread tracker(o);
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker =
      start_worker(tracker.endpoint(), "k", "intruder",
                   {"--keyfile", dir.path() + "/strangers/stranger.key", "--tracker-key", dir.path() + "/tracker.pub"});
  EXPECT_FALSE(wait_for_workers(tracker.endpoint(), as(keys.client, keys.tracker), 1, 1500));
}

TEST(Security, PlaintextOnlyOnLoopbackAndIpc) {
  EXPECT_TRUE(check_insecure_endpoint("ipc:///tmp/x/tracker").is_ok());
  EXPECT_TRUE(check_insecure_endpoint("tcp://127.0.0.1:9190").is_ok());
  EXPECT_TRUE(check_insecure_endpoint("tcp://localhost:9190").is_ok());
  EXPECT_TRUE(check_insecure_endpoint("tcp://[::1]:9190").is_ok());
  EXPECT_EQ(check_insecure_endpoint("tcp://*:9190").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_insecure_endpoint("tcp://0.0.0.0:9190").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_insecure_endpoint("tcp://10.1.2.3:9190").code(), ErrorCode::kInvalidArgument);
  TrackerOptions o;
  o.bind = "tcp://*:0";
  o.security.insecure = true;
  Tracker tracker(o);
  EXPECT_EQ(tracker.bind().code(), ErrorCode::kInvalidArgument);
}

TEST(Security, KeyFilesArePrivateAndRoundTrip) {
  TempDir dir;
  auto keys = generate_keypair();
  ASSERT_TRUE(keys.is_ok());
  ASSERT_TRUE(write_keypair(dir.path() + "/k", "me", *keys).is_ok());
  struct stat info;
  ASSERT_EQ(::stat((dir.path() + "/k/me.key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  auto loaded = load_keypair(dir.path() + "/k/me.key");
  ASSERT_TRUE(loaded.is_ok());
  EXPECT_EQ(loaded->secret_z85, keys->secret_z85);
  EXPECT_EQ(load_public_key(dir.path() + "/k/me.pub").value(), keys->public_z85);
  EXPECT_EQ(write_keypair(dir.path() + "/k", "me", *keys).code(), ErrorCode::kInvalidArgument);
  ::chmod((dir.path() + "/k/me.key").c_str(), 0644);
  EXPECT_EQ(load_keypair(dir.path() + "/k/me.key").status().code(), ErrorCode::kInvalidArgument);
  std::ofstream(dir.path() + "/bad.keys") << "# comment\nnot-a-key\n";
  auto bad = load_authorized_keys(dir.path() + "/bad.keys");
  EXPECT_EQ(bad.status().code(), ErrorCode::kParseError);
  EXPECT_NE(bad.status().message().find(":2:"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace tessera::rpc
