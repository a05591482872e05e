// The tracker process is killed (SIGKILL) and restarted in the middle of a
// batch: workers re-register, the client resubmits what the new tracker does
// not know, and every job gets exactly one result.
#include <netinet/in.h>
#include <sys/socket.h>

#include <set>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<Process> start_tracker_process(const std::string& endpoint) {
  return std::make_unique<Process>(std::vector<std::string>{bin_dir() + "/tessera", "tracker", "--bind", endpoint,
                                                            "--insecure", "--heartbeat-ms", "200", "--dead-after-ms",
                                                            "800", "--no-worker-grace-ms", "3000"});
}

TEST(TrackerRestart, EverythingReconnectsAndNothingIsLost) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto tracker = start_tracker_process(endpoint);
  auto w1 = start_worker(endpoint, "k", "w1");
  auto w2 = start_worker(endpoint, "k", "w2");
  ASSERT_TRUE(wait_for_workers(endpoint, plaintext(), 2));

  ClientOptions o;
  o.tracker = endpoint;
  o.security = plaintext();
  o.sync_ms = 200;
  auto client = RpcClient::connect(o);
  ASSERT_TRUE(client.is_ok());
  std::set<uint64_t> ids;
  MeasureInput in = kernel_input("sleep_50ms");  // 3 calls: 150 ms a job
  for (int i = 0; i < 10; ++i) ids.insert((*client)->submit(in, "k"));

  auto results = collect(**client, 1, 10000);
  ASSERT_GE(results.size(), 1u);
  tracker->kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  tracker = start_tracker_process(endpoint);

  auto rest = collect(**client, ids.size() - results.size(), 30000);
  results.insert(results.end(), rest.begin(), rest.end());
  std::set<uint64_t> seen;
  for (const auto& [id, r] : results) {
    EXPECT_TRUE(seen.insert(id).second) << "job " << id << " reported twice";
    EXPECT_TRUE(r.ok()) << r.message;
  }
  EXPECT_EQ(seen, ids);
  EXPECT_TRUE(collect(**client, 1, 500).empty());
  EXPECT_TRUE(w1->alive());
  EXPECT_TRUE(w2->alive());
  EXPECT_TRUE(wait_for_workers(endpoint, plaintext(), 2));
}

}  // namespace
}  // namespace tessera::rpc
