// Package-timing jobs (rpc/measure_packages.h): whole packages timed on a
// worker in its sandbox, built here around the probe kernels; the wire's
// checks of such jobs and results.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zmq.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "rpc/measure_packages.h"
#include "rpc/sandbox.h"
#include "rpc/wire.h"
#include "runtime/package.h"
#include "tests/rpc/test_util.h"

namespace tessera::rpc {
namespace {

using namespace testing;  // NOLINT

// out = f(in) for 256 floats, by each of `symbols` in turn (out in place
// after the first), from the sandbox probes' library.
std::string probe_package(const std::vector<std::string>& symbols) {
  runtime::PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = read_file(TESSERA_SANDBOX_PROBES_PATH);
  c.values = {{"x", runtime::ValueKind::kInput, DType::f32(), {256}, ""},
              {"y", runtime::ValueKind::kOutput, DType::f32(), {256}, ""}};
  for (size_t i = 0; i < symbols.size(); ++i) c.calls.push_back({symbols[i], {i == 0 ? 0 : 1, 1}});
  c.inputs = {0};
  c.outputs = {1};
  return runtime::write_package_bytes(c).value();
}

MeasureInput package_input(std::vector<std::string> packages, bool whole_runs) {
  MeasureInput in;
  in.timeout_ms = 20000;
  PackageTimingSpec spec;
  spec.packages = std::move(packages);
  spec.whole_runs = whole_runs;
  spec.runs = 5;
  spec.rounds = {.rounds = 4, .round_s = 0.002};
  in.packages = std::move(spec);
  return in;
}

TEST(PackageJobs, EachCallOfEachPackageIsTimedInTheSandbox) {
  pb::Result r = run_sandboxed(package_input(
      {probe_package({"probe_add_one"}), probe_package({"probe_add_one", "probe_add_one", "probe_add_one"})}, false));
  ASSERT_EQ(r.error(), pb::OK) << r.message();
  MeasureResult m = from_wire_result(r);
  ASSERT_EQ(m.call_medians_s.size(), 2u);
  EXPECT_EQ(m.call_medians_s[0].size(), 1u);
  EXPECT_EQ(m.call_medians_s[1].size(), 3u);
  for (const auto& package : m.call_medians_s)
    for (double s : package) EXPECT_GT(s, 0.0);
}

TEST(PackageJobs, WholeRunsAreTimedAgainstTheFirstPackageInTheSandbox) {
  std::vector<std::string> many(40, "probe_add_one");
  pb::Result r = run_sandboxed(package_input({probe_package({"probe_add_one"}), probe_package(many)}, true));
  ASSERT_EQ(r.error(), pb::OK) << r.message();
  MeasureResult m = from_wire_result(r);
  ASSERT_EQ(m.whole.median_s.size(), 2u);
  EXPECT_EQ(m.whole.rounds, 4);
  EXPECT_EQ(m.whole.ratio_to_first[0], 1.0);
  EXPECT_GT(m.whole.ratio_to_first[1], 1.5);  // 40 calls against 1
}

TEST(PackageJobs, AKernelThatReachesOutIsKilledAsInAKernelJob) {
  // Tessera's kernels never run before the lock-down: the first call is
  // killed.
  pb::Result r = run_sandboxed(package_input({probe_package({"probe_read_passwd"})}, false));
  EXPECT_EQ(r.error(), pb::CRASH) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
  EXPECT_NE(r.message().find("forbidden system call"), std::string::npos) << r.message();
}

// A package's backend starts threads as it loads, so a package job's load
// is not sealed against them as a kernel job's is; a root worker's job,
// under an identity of its own, has them bounded instead (RLIMIT_NPROC).
// The probe's constructor starts 500 and its kernel fails if all started.
TEST(PackageJobs, APackageJobsThreadsAreBoundedWhileItLoads) {
  if (::geteuid() != 0) GTEST_SKIP() << "a thread limit per job needs a root worker's job ids";
  std::string package = probe_package({"probe_add_one"});
  runtime::PackageContents c = runtime::read_package_bytes(package).value();
  c.library = read_file(std::string(TESSERA_LOADER_PROBE_DIR) + "/libtessera_loader_probe_many_threads.so");
  SandboxOptions options;
  std::tie(options.job_uid_first, options.job_uid_count) = default_job_uids("package-threads");
  options.unprivileged_uid = options.unprivileged_gid = options.job_uid_first;
  pb::Result r = run_sandboxed(package_input({runtime::write_package_bytes(c).value()}, false), options);
  EXPECT_EQ(r.error(), pb::OK) << pb::ErrorKind_Name(r.error()) << ": " << r.message();
}

// A worker not run as root gives each job a user namespace of its own, in
// which its tasks are counted alone: the same bound. Run in a child process,
// which drops root for good and measures without gtest's assertions.
TEST(PackageJobs, ANonRootWorkersPackageJobsThreadsAreBoundedWhileItLoads) {
  std::string package = probe_package({"probe_add_one"});
  runtime::PackageContents c = runtime::read_package_bytes(package).value();
  c.library = read_file(std::string(TESSERA_LOADER_PROBE_DIR) + "/libtessera_loader_probe_many_threads.so");
  pb::Job job = to_wire_job(package_input({runtime::write_package_bytes(c).value()}, false));
  job.set_session_id("s");
  job.set_job_id(1);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(10);
    if (!probe_network_isolation().empty()) ::_exit(11);
    const Result<pb::Result> r = measure_job(job, SandboxOptions{});
    if (!r.is_ok()) ::_exit(12);
    if (r->error() != pb::OK)
      std::fprintf(stderr, "%s: %s\n", pb::ErrorKind_Name(r->error()).c_str(), r->message().c_str());
    ::_exit(r->error() == pb::OK ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 11) GTEST_SKIP() << "no user namespaces for a user other than root here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: dropping root, 12: start, 13: the job failed (its threads all started)";
}

TEST(PackageJobs, APackageThatDoesNotLoadIsALoadErrorNamingWhatFailed) {
  pb::Result missing = run_sandboxed(package_input({probe_package({"no_such_kernel"})}, false));
  EXPECT_EQ(missing.error(), pb::LOAD_ERROR);
  EXPECT_NE(missing.message().find("no_such_kernel"), std::string::npos) << missing.message();
  pb::Result garbage = run_sandboxed(package_input({"not a package"}, true));
  EXPECT_EQ(garbage.error(), pb::LOAD_ERROR);
  EXPECT_NE(garbage.message().find("package 0"), std::string::npos) << garbage.message();
}

TEST(PackageJobs, TheWireRefusesMalformedPackageJobs) {
  const WireLimits limits;
  auto job_of = [](MeasureInput in) {
    pb::Job job = to_wire_job(in);
    job.set_session_id("s");
    job.set_device_key("local");
    job.set_job_id(1);
    return job;
  };
  const std::string p = probe_package({"probe_add_one"});
  EXPECT_TRUE(validate_job(job_of(package_input({p}, false)), limits).is_ok());
  EXPECT_TRUE(validate_job(job_of(package_input({p, p}, true)), limits).is_ok());
  MeasureInput with_kernel = package_input({p}, false);
  with_kernel.library = "x";
  with_kernel.symbol = "probe_add_one";
  EXPECT_NE(validate_job(job_of(with_kernel), limits).message().find("no library"), std::string::npos);
  EXPECT_FALSE(validate_job(job_of(package_input({}, false)), limits).is_ok());
  EXPECT_FALSE(validate_job(job_of(package_input(std::vector<std::string>(9, p), false)), limits).is_ok());
  EXPECT_FALSE(validate_job(job_of(package_input({""}, false)), limits).is_ok());
  MeasureInput no_runs = package_input({p}, false);
  no_runs.packages->runs = 0;
  EXPECT_FALSE(validate_job(job_of(no_runs), limits).is_ok());
  MeasureInput long_rounds = package_input({p}, true);
  long_rounds.packages->rounds.round_s = 60;
  EXPECT_FALSE(validate_job(job_of(long_rounds), limits).is_ok());
  WireLimits small;
  small.max_library_bytes = 16;
  small.max_reference_bytes = 16;
  EXPECT_NE(validate_job(job_of(package_input({p}, false)), small).message().find("exceed"), std::string::npos);
}

TEST(PackageJobs, TheWireRefusesResultsWithBadPackageTimes) {
  pb::Result r;
  r.set_session_id("s");
  r.mutable_package_times()->add_calls()->add_seconds(1e-3);
  EXPECT_TRUE(validate_result(r).is_ok());
  r.mutable_package_times()->mutable_calls(0)->add_seconds(-1);
  EXPECT_FALSE(validate_result(r).is_ok());
  pb::Result whole;
  whole.set_session_id("s");
  whole.mutable_package_times()->set_rounds(4);
  whole.mutable_package_times()->add_median_s(std::nan(""));
  EXPECT_FALSE(validate_result(whole).is_ok());
  whole.mutable_package_times()->set_median_s(0, 1e-3);
  whole.mutable_package_times()->add_rounds_slower(5);
  EXPECT_FALSE(validate_result(whole).is_ok());
}

TEST(PackageJobs, ALocalRunnerTimesPackagesOnItsWorker) {
  LocalRunnerOptions o;
  o.worker_binary = bin_dir() + "/tessera-worker";
  auto runner = LocalRunner::start(o);
  ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
  auto results = (*runner)->run({package_input({probe_package({"probe_add_one"})}, false), kernel_input("add_one"),
                                 package_input({probe_package({"nope"})}, true)});
  ASSERT_TRUE(results.is_ok()) << results.status().to_string();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_TRUE((*results)[0].ok()) << (*results)[0].message;
  EXPECT_EQ((*results)[0].call_medians_s.size(), 1u);
  EXPECT_TRUE((*results)[1].ok()) << (*results)[1].message;  // a kernel job alongside
  EXPECT_EQ((*results)[2].error, MeasureErrorKind::kLoadError);
  EXPECT_NE((*results)[2].message.find("nope"), std::string::npos) << (*results)[2].message;
}

// A farm whose workers all predate package timing (they register without
// times-packages) never gets the job, and the client hears why at once.
TEST(PackageJobs, WorkersOlderThanPackageTimingNeverGetAPackageJob) {
  TempDir dir;
  TrackerOptions o = fast_tracker(dir.path());
  o.dead_after_ms = 30000;  // the old worker below sends no heartbeat
  TrackerThread tracker(o);
  ASSERT_TRUE(tracker.status().is_ok());
  Context ctx;
  Socket old = Socket::create(ctx.get(), ZMQ_DEALER, 1 << 20).value();
  const std::string routing = "w:old";
  ASSERT_TRUE(old.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "id").is_ok());
  ASSERT_TRUE(old.connect(tracker.endpoint()).is_ok());
  pb::Envelope reg;
  reg.mutable_register_()->set_worker_id("old");
  reg.mutable_register_()->set_device_key("k");
  reg.mutable_register_()->set_target("llvm");
  reg.mutable_register_()->set_max_jobs(1);
  reg.mutable_register_()->set_incarnation("before-packages");
  ASSERT_TRUE(send_envelope(old, reg).is_ok());
  ASSERT_TRUE(wait_for_workers(tracker.endpoint(), plaintext(), 1));
  ClientOptions co;
  co.tracker = tracker.endpoint();
  co.security = plaintext();
  auto client = RpcClient::connect(co);
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  (*client)->submit(package_input({probe_package({"probe_add_one"})}, false), "k");
  auto results = collect(**client, 1, 10000);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].second.error, MeasureErrorKind::kNoWorker);
  EXPECT_NE(results[0].second.message.find("times packages"), std::string::npos) << results[0].second.message;
  for (;;) {
    auto frame = recv_message(old);
    if (!frame.is_ok()) break;
    pb::Envelope env;
    if (parse_envelope(frame->frames.back(), &env)) EXPECT_FALSE(env.has_dispatch()) << "a package job reached it";
  }
}

}  // namespace
}  // namespace tessera::rpc
