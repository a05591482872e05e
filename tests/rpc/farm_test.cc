// A tracker with real worker processes on ipc: keys, classification of bad
// kernels, dead workers, NO_WORKER.
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

// The processes whose parent is `parent` (/proc/PID/stat's fourth field).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');  // "pid (comm) state ppid ..."
    if (paren == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

// Waits (up to about 3 s) until the farm's only key has one busy worker.
bool one_worker_busy(const std::string& endpoint) {
  for (int i = 0; i < 300; ++i) {
    auto st = query_farm_status(endpoint, plaintext(), 500);
    if (st.is_ok() && st->keys_size() == 1 && st->keys(0).busy() == 1) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::unique_ptr<RpcClient> client_for(const std::string& endpoint) {
  ClientOptions o;
  o.tracker = endpoint;
  o.security = plaintext();
  o.sync_ms = 200;
  auto c = RpcClient::connect(o);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return std::move(c).value();
}

TEST(Farm, SeveralWorkersUnderTwoKeysServeOnlyTheirKey) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok()) << tracker.status().to_string();
  auto a1 = start_worker(tracker.endpoint(), "key-a", "a1");
  auto a2 = start_worker(tracker.endpoint(), "key-a", "a2");
  auto b1 = start_worker(tracker.endpoint(), "key-b", "b1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 3));
  auto client = client_for(tracker.endpoint());
  std::map<uint64_t, std::string> key_of;
  MeasureInput in = kernel_input("add_one");
  in.reference = add_one_reference();
  for (int i = 0; i < 6; ++i) {
    key_of[client->submit(in, "key-a")] = "key-a";
    key_of[client->submit(in, "key-b")] = "key-b";
  }
  auto results = collect(*client, 12, 20000);
  ASSERT_EQ(results.size(), 12u);
  std::set<std::string> a_workers;
  for (const auto& [id, r] : results) {
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.costs_s.size(), 2u);
    if (key_of[id] == "key-a") {
      EXPECT_TRUE(r.worker_id == "a1" || r.worker_id == "a2") << r.worker_id;
      a_workers.insert(r.worker_id);
    } else {
      EXPECT_EQ(r.worker_id, "b1");
    }
  }
  auto st = query_farm_status(tracker.endpoint(), plaintext());
  ASSERT_TRUE(st.is_ok());
  ASSERT_EQ(st->keys_size(), 2);
  EXPECT_EQ(st->keys(0).key(), "key-a");
  EXPECT_EQ(st->keys(0).workers(), 2u);
  EXPECT_EQ(st->keys(0).done(), 6u);
  EXPECT_EQ(st->keys(1).done(), 6u);
  EXPECT_NE(format_farm_status(*st).find("key-b"), std::string::npos);
}

TEST(Farm, BadKernelsAreClassifiedAndTheWorkerSurvives) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  auto client = client_for(tracker.endpoint());

  std::map<uint64_t, std::string> name;
  name[client->submit(kernel_input("segfault"), "k")] = "segfault";
  name[client->submit(kernel_input("loop_forever", 500), "k")] = "loop_forever";
  name[client->submit(kernel_input("fail_status"), "k")] = "fail_status";
  MeasureInput wrong = kernel_input("add_two");
  wrong.reference = add_one_reference();
  name[client->submit(wrong, "k")] = "add_two";
  name[client->submit(kernel_input("no_such_symbol"), "k")] = "no_such_symbol";
  MeasureInput garbage = kernel_input("add_one");
  garbage.library = "this is not an ELF file";
  name[client->submit(garbage, "k")] = "garbage";
  MeasureInput good = kernel_input("add_one");
  good.reference = add_one_reference();
  name[client->submit(good, "k")] = "add_one";

  auto results = collect(*client, name.size(), 20000);
  ASSERT_EQ(results.size(), name.size());
  std::map<std::string, MeasureResult> by_name;
  for (auto& [id, r] : results) by_name[name[id]] = r;
  EXPECT_EQ(by_name["segfault"].error, MeasureErrorKind::kCrash);
  EXPECT_NE(by_name["segfault"].message.find("SIGSEGV"), std::string::npos) << by_name["segfault"].message;
  EXPECT_EQ(by_name["loop_forever"].error, MeasureErrorKind::kTimeout);
  EXPECT_EQ(by_name["fail_status"].error, MeasureErrorKind::kRuntimeError);
  EXPECT_NE(by_name["fail_status"].message.find("7"), std::string::npos);
  EXPECT_EQ(by_name["add_two"].error, MeasureErrorKind::kWrongAnswer);
  EXPECT_EQ(by_name["no_such_symbol"].error, MeasureErrorKind::kLoadError);
  EXPECT_EQ(by_name["garbage"].error, MeasureErrorKind::kLoadError);
  EXPECT_TRUE(by_name["add_one"].ok()) << by_name["add_one"].message;
  EXPECT_TRUE(worker->alive());
}

TEST(Farm, KilledWorkerMidJobIsRequeuedAndReportedOnce) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  // Its job directory goes in the test's directory: a SIGKILLed worker cannot clean up.
  auto doomed = start_worker(tracker.endpoint(), "k", "doomed", {"--temp-dir", dir.path()});
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  auto client = client_for(tracker.endpoint());
  MeasureInput slow = kernel_input("sleep_200ms");
  slow.timing.repeat = 3;  // 4 calls: 800 ms
  const uint64_t id = client->submit(slow, "k");
  // Wait until the job runs on the doomed worker, then bring up a second one.
  ASSERT_TRUE(one_worker_busy(tracker.endpoint()));
  auto rescuer = start_worker(tracker.endpoint(), "k", "rescuer");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 2));
  // Its children: the job's sandboxed child and the launcher that forked it.
  const std::vector<pid_t> children = children_of(doomed->pid());
  std::vector<std::string> names;
  for (pid_t child : children) names.push_back(read_file("/proc/" + std::to_string(child) + "/comm"));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"tessera-job\n", "tessera-launch\n"}));
  doomed->kill(SIGKILL);
  // The job dies with its worker (its death signal), asleep or not, and so
  // does the launcher.
  for (pid_t child : children) {
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = ::kill(child, 0) != 0 && errno == ESRCH;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(gone) << "the measuring child " << child << " outlived its killed worker";
  }

  auto results = collect(*client, 1, 15000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].first, id);
  EXPECT_TRUE(results[0].second.ok()) << results[0].second.message;
  EXPECT_EQ(results[0].second.worker_id, "rescuer");
  // Exactly one result: nothing else arrives.
  EXPECT_TRUE(collect(*client, 1, 1000).empty());
  auto st = query_farm_status(tracker.endpoint(), plaintext());
  ASSERT_TRUE(st.is_ok());
  EXPECT_EQ(st->requeued_jobs(), 1u);
  EXPECT_EQ(st->dead_workers(), 1u);
  EXPECT_EQ(st->keys(0).done(), 1u);
}

TEST(Farm, FrozenWorkerIsDeadItsLateResultDroppedAndItRejoins) {
  // SIGSTOP: the connection stays open but nothing answers, like a board that
  // lost power. Its job moves on; when it wakes, its late result is dropped
  // and it registers again.
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto frozen = start_worker(tracker.endpoint(), "k", "frozen");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  auto client = client_for(tracker.endpoint());
  MeasureInput slow = kernel_input("sleep_200ms");
  slow.timing.repeat = 1;  // 2 calls: 400 ms
  const uint64_t id = client->submit(slow, "k");
  ASSERT_TRUE(one_worker_busy(tracker.endpoint()));
  ::kill(frozen->pid(), SIGSTOP);
  auto rescuer = start_worker(tracker.endpoint(), "k", "rescuer");
  auto results = collect(*client, 1, 15000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].first, id);
  EXPECT_EQ(results[0].second.worker_id, "rescuer");
  ::kill(frozen->pid(), SIGCONT);
  // The frozen worker's child finished meanwhile: its late result is dropped,
  // and the worker comes back.
  bool rejoined = false;
  uint64_t duplicates = 0;
  for (int i = 0; i < 300 && !(rejoined && duplicates > 0); ++i) {
    auto st = query_farm_status(tracker.endpoint(), plaintext(), 500);
    if (st.is_ok() && st->keys_size() == 1) {
      rejoined = st->keys(0).workers() == 2;
      duplicates = st->duplicate_results();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(rejoined);
  EXPECT_EQ(duplicates, 1u);
  EXPECT_TRUE(collect(*client, 1, 300).empty());
}

TEST(Farm, UnknownKeyFailsFastWithNoWorkerNamingTheKeys) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "x86-avx512", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  auto client = client_for(tracker.endpoint());
  const auto t0 = std::chrono::steady_clock::now();
  client->submit(kernel_input("add_one"), "riscv-board");
  auto results = collect(*client, 1, 5000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  const MeasureResult& r = results[0].second;
  EXPECT_EQ(r.error, MeasureErrorKind::kNoWorker);
  EXPECT_NE(r.message.find("riscv-board"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("x86-avx512"), std::string::npos) << r.message;
}

TEST(Farm, InvalidJobIsRefusedAsProtocolError) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto client = client_for(tracker.endpoint());
  MeasureInput in = kernel_input("add_one");
  in.args[0].shape = {-4};
  client->submit(in, "k");
  auto results = collect(*client, 1, 5000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].second.error, MeasureErrorKind::kProtocolError);
}

// A client that vanishes with jobs queued (killed: no cancel sent): once its
// session has been silent for client_gone_after_ms, its jobs are dropped,
// not measured for no one.
TEST(Farm, TheJobsOfAClientThatVanishedAreDropped) {
  TempDir dir;
  TrackerOptions options = fast_tracker(dir.path());
  options.client_gone_after_ms = 1000;
  TrackerThread tracker(options);
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  auto client = client_for(tracker.endpoint());
  MeasureInput slow = kernel_input("sleep_200ms");
  slow.timing.repeat = 1;  // 2 calls: 400 ms a job
  for (int i = 0; i < 8; ++i) client->submit(slow, "k");
  ASSERT_TRUE(one_worker_busy(tracker.endpoint()));
  client.reset();  // gone without a word
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto st = query_farm_status(tracker.endpoint(), plaintext());
  ASSERT_TRUE(st.is_ok());
  ASSERT_EQ(st->keys_size(), 1);
  EXPECT_EQ(st->keys(0).queued(), 0u);
  // Measured: the job running when it vanished and at most the ones the
  // worker took within the second of silence; the rest were dropped.
  EXPECT_LE(st->keys(0).done(), 4u);
  EXPECT_GE(st->keys(0).failed(), 4u);
}

TEST(Farm, HigherPriorityRunsFirst) {
  TempDir dir;
  TrackerOptions options = fast_tracker(dir.path());
  options.no_worker_grace_ms = 5000;  // the jobs wait for the worker started below
  TrackerThread tracker(options);
  ASSERT_TRUE(tracker.status().is_ok());
  auto client = client_for(tracker.endpoint());
  // Queue before any worker exists, so the order is the tracker's choice.
  MeasureInput low = kernel_input("trivial"), high = kernel_input("trivial");
  high.priority = 10;
  std::vector<uint64_t> lows = {client->submit(low, "k"), client->submit(low, "k")};
  const uint64_t high_id = client->submit(high, "k");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  auto results = collect(*client, 3, 10000);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].first, high_id);
}

TEST(Farm, ConcurrentSessionsShareTheWorkersFairly) {
  TempDir dir;
  TrackerOptions options = fast_tracker(dir.path());
  options.no_worker_grace_ms = 5000;
  TrackerThread tracker(options);
  ASSERT_TRUE(tracker.status().is_ok());
  // Session "a" queues six jobs before session "b" queues two; with one
  // worker, b must not wait for all of a's: the dispatches alternate.
  auto a = client_for(tracker.endpoint());
  auto b = client_for(tracker.endpoint());
  const MeasureInput in = kernel_input("sleep_10ms");
  for (int i = 0; i < 6; ++i) a->submit(in, "k");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 2; ++i) b->submit(in, "k");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  std::string order;  // "a" or "b" per result, in arrival order
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (order.size() < 8 && std::chrono::steady_clock::now() < until) {
    for (auto& r : a->poll(5)) order += r.second.ok() ? "a" : "!";
    for (auto& r : b->poll(5)) order += r.second.ok() ? "b" : "!";
  }
  ASSERT_EQ(order.size(), 8u) << order;
  EXPECT_EQ(order.find('!'), std::string::npos) << order;
  EXPECT_LE(order.rfind('b'), 4u) << "session b waited behind session a: " << order;
}

TEST(Farm, RunnerStreamsResultsAsTheyComplete) {
  TempDir dir;
  TrackerThread tracker(fast_tracker(dir.path()));
  ASSERT_TRUE(tracker.status().is_ok());
  auto worker = start_worker(tracker.endpoint(), "k", "w1");
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  RpcRunnerOptions o;
  o.tracker = tracker.endpoint();
  o.security = plaintext();
  o.device_key = "k";
  auto runner = RpcRunner::connect(o);
  ASSERT_TRUE(runner.is_ok());
  std::vector<size_t> seen;
  auto results = (*runner)->run({kernel_input("trivial"), kernel_input("fail_status"), kernel_input("trivial")},
                                [&](size_t i, const MeasureResult&) { seen.push_back(i); });
  ASSERT_TRUE(results.is_ok());
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_EQ((*results)[1].error, MeasureErrorKind::kRuntimeError);
  EXPECT_TRUE((*results)[2].ok());
}

}  // namespace
}  // namespace tessera::rpc
