// Call metadata in the package, the executor's traced run, and the Chrome
// trace it becomes: checked against the trace event format's required fields
// by parsing the JSON, on a real kernel library (testdata/graph_kernels.c).
#include "runtime/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/graph_executor.h"
#include "runtime/package.h"
#include "tests/runtime/package_bytes.h"
#include "tests/runtime/test_files.h"

namespace tessera::runtime {
namespace {

const std::string kGraphKernels = TESSERA_TEST_GRAPH_KERNELS_PATH;

using test::read_file;

// h = x @ w (4x8 by 8x16), y = relu(h) on the pool; with call metadata.
PackageContents traced_package() {
  NDArray w = NDArray::create({8, 16}, DType::f32()).value();
  w.fill_random(7);
  PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = read_file(kGraphKernels);
  c.values = {
      {"x", ValueKind::kInput, DType::f32(), {4, 8}, ""},
      {"w",
       ValueKind::kConstant,
       DType::f32(),
       {8, 16},
       std::string(static_cast<const char*>(w.raw_data()), static_cast<size_t>(w.nbytes()))},
      {"h", ValueKind::kIntermediate, DType::f32(), {4, 16}, ""},
      {"y", ValueKind::kOutput, DType::f32(), {4, 16}, ""},
  };
  c.calls = {{"matmul_4x8x16", {0, 1, 2}}, {"relu_64_parallel", {2, 3}}};
  c.inputs = {0};
  c.outputs = {3};
  c.call_info = {{"fused_matmul", {"/layer1/fc/MatMul"}, "0123456789abcdef0123456789abcdef", 1024, 1},
                 {"fused_relu", {"/layer1/act \"1\"\n/Relu"}, "fedcba9876543210fedcba9876543210", 0, 1}};
  return c;
}

// The "kernel" event of call `call` (null when there is none).
nlohmann::json kernel_event(const nlohmann::json& trace, size_t call) {
  for (const nlohmann::json& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "kernel" && e["args"]["call"] == call) return e;
  return nullptr;
}

std::unique_ptr<GraphExecutor> load_and_feed(const PackageContents& c) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.pool.steal_late_shares = false;  // the worker's row shows its share
  auto exec = GraphExecutor::load(c, options);
  EXPECT_TRUE(exec.is_ok()) << exec.status().to_string();
  if (!exec.is_ok()) return nullptr;
  NDArray x = NDArray::create({4, 8}, DType::f32()).value();
  x.fill_random(3);
  EXPECT_TRUE((*exec)->set_input("x", x).is_ok());
  return std::move(exec).value();
}

TEST(CallInfo, RoundTripsUnderItsHeaderFlag) {
  const PackageContents c = traced_package();
  const std::string bytes = write_package_bytes(c).value();
  EXPECT_EQ(bytes[8], 1) << "call metadata needs no new format version";
  EXPECT_EQ(static_cast<uint8_t>(bytes[12]), kPackageFlagCallInfo);
  auto back = read_package_bytes(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
}

TEST(CallInfo, APackageWithoutItIsWrittenAsBeforeAndLoads) {
  PackageContents c = traced_package();
  c.call_info.clear();
  const std::string bytes = write_package_bytes(c).value();
  EXPECT_EQ(bytes[8], 1);
  EXPECT_EQ(bytes[12], 0) << "no flag: older runtimes read it";
  auto back = read_package_bytes(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(back->call_info.empty());
  auto exec = load_and_feed(*back);
  ASSERT_NE(exec, nullptr);
  ASSERT_EQ(exec->call_descriptions().size(), 2u);
  EXPECT_FALSE(exec->call_descriptions()[0].info.has_value());
  EXPECT_EQ(call_display_name(exec->call_descriptions()[0]), "matmul_4x8x16");
  auto spans = exec->run_traced();
  ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
  auto json = nlohmann::json::parse(chrome_trace_json(exec->call_descriptions(), *spans, {1, 2, "p", "t"}));
  EXPECT_EQ(kernel_event(json, 0)["name"], "matmul_4x8x16");
  EXPECT_FALSE(kernel_event(json, 0)["args"].contains("nodes"));
}

TEST(CallInfo, AnEntryCountOtherThanTheCallsIsRejected) {
  PackageContents c = traced_package();
  c.call_info.pop_back();
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
  EXPECT_EQ(write_package_bytes(c).status().code(), ErrorCode::kParseError);
}

TEST(CallInfo, MoreOutputsThanArgumentsAreRejected) {
  PackageContents c = traced_package();
  c.call_info[1].num_outputs = 3;
  const Status st = validate_package(c);
  EXPECT_EQ(st.code(), ErrorCode::kParseError);
  EXPECT_NE(st.message().find("relu_64_parallel"), std::string::npos) << st.message();
}

TEST(CallInfo, AnUnknownHeaderFlagIsRejected) {
  std::string bytes = write_package_bytes(traced_package()).value();
  bytes[12] = 3;
  test::fix_checksum(&bytes);
  auto r = read_package_bytes(bytes);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("flags"), std::string::npos) << r.status().message();
}

TEST(CallInfo, EveryTruncationIsAParseError) {
  const std::string bytes = write_package_bytes(traced_package()).value();
  for (size_t n = 0; n < bytes.size(); n += 7) {
    std::string cut = bytes.substr(0, n);
    EXPECT_EQ(read_package_bytes(cut).status().code(), ErrorCode::kParseError) << n;
  }
}

TEST(CallInfo, TheExecutorDescribesEachCallWithItsOutputShapes) {
  auto exec = load_and_feed(traced_package());
  ASSERT_NE(exec, nullptr);
  const auto& d = exec->call_descriptions();
  ASSERT_EQ(d.size(), 2u);
  ASSERT_TRUE(d[0].info.has_value());
  EXPECT_EQ(d[0].symbol, "matmul_4x8x16");
  EXPECT_EQ(d[0].info->nodes, std::vector<std::string>{"/layer1/fc/MatMul"});
  EXPECT_EQ(d[0].output_shapes, (std::vector<std::vector<int64_t>>{{4, 16}}));
  EXPECT_EQ(shapes_text(d[0].output_shapes), "4x16");
}

TEST(CallDisplayName, LaterNodesDropThePathTheyShareWithTheFirst) {
  CallDescription d{
      "tsr_k1",
      CallInfo{"fused_conv_relu", {"/layer1/layer1.0/conv1/Conv", "/layer1/layer1.0/relu/Relu"}, "", 0, 1},
      {}};
  EXPECT_EQ(call_display_name(d), "/layer1/layer1.0/conv1/Conv + relu/Relu");
  d.info->nodes = {"conv0", "relu0"};
  EXPECT_EQ(call_display_name(d), "conv0 + relu0");
  d.info->nodes = {"a", "b", "c", "d", "e", "f", "g"};
  EXPECT_EQ(call_display_name(d), "a + b + c + d + e + f + g");
  d.info->nodes.push_back("h");
  EXPECT_EQ(call_display_name(d), "a + b + c + d + e + f + 2 more");
  d.info->nodes.clear();
  EXPECT_EQ(call_display_name(d), "fused_conv_relu");
}

// The trace event format's requirements (the Chrome "Trace Event Format"
// document, which Perfetto's JSON importer follows): a traceEvents array;
// every event has name, ph, pid, tid (and ts); complete events ("X") have
// dur >= 0; per thread, X events start in order and nest or are disjoint.
void expect_valid_chrome_trace(const nlohmann::json& trace, size_t calls) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> spans;  // (pid, tid) -> [ts, end)
  size_t complete = 0, metadata = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    for (const char* field : {"name", "ph", "pid", "tid", "ts"}) ASSERT_TRUE(e.contains(field)) << field << e.dump();
    ASSERT_TRUE(e["name"].is_string());
    ASSERT_TRUE(e["pid"].is_number_integer());
    ASSERT_TRUE(e["tid"].is_number_integer());
    ASSERT_TRUE(e["ts"].is_number());
    const std::string ph = e["ph"];
    if (ph == "M") {
      ++metadata;
      EXPECT_TRUE(e["name"] == "process_name" || e["name"] == "thread_name") << e.dump();
      EXPECT_TRUE(e["args"]["name"].is_string());
      continue;
    }
    ASSERT_EQ(ph, "X") << e.dump();
    complete += e["cat"] == "kernel";
    ASSERT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
    const double ts = e["ts"], dur = e["dur"];
    EXPECT_GE(ts, 0);
    EXPECT_GE(dur, 0);
    spans[{e["pid"], e["tid"]}].push_back({ts, ts + dur});
  }
  EXPECT_GE(metadata, 2u);
  EXPECT_GE(complete, calls);
  for (const auto& [thread, list] : spans) {
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].first, list[i].first) << "ts must not go back on one thread";
      const bool disjoint = list[i - 1].second <= list[i].first + 1e-9;
      const bool nested = list[i].second <= list[i - 1].second + 1e-9;
      EXPECT_TRUE(disjoint || nested) << "event " << i << " overlaps the one before it";
    }
  }
}

TEST(ChromeTrace, ATracedRunIsAValidTraceWithTheCallsMetadata) {
  auto exec = load_and_feed(traced_package());
  ASSERT_NE(exec, nullptr);
  auto spans = exec->run_traced();
  ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_TRUE(exec->get_output("y").is_ok()) << "a traced run is a run";
  const std::string path = ::testing::TempDir() + "tessera_trace_test.json";
  ASSERT_TRUE(
      write_chrome_trace(path, exec->call_descriptions(), *spans, {42, 43, "tessera run m.tsr", "executor"}).is_ok());
  const nlohmann::json trace = nlohmann::json::parse(read_file(path));
  std::remove(path.c_str());
  expect_valid_chrome_trace(trace, 2);
  const nlohmann::json& events = trace["traceEvents"];
  EXPECT_EQ(events[0]["args"]["name"], "tessera run m.tsr");
  const nlohmann::json matmul = kernel_event(trace, 0);
  EXPECT_EQ(matmul["name"], "/layer1/fc/MatMul");
  EXPECT_EQ(matmul["pid"], 42);
  EXPECT_EQ(matmul["tid"], 43);
  EXPECT_EQ(matmul["args"]["symbol"], "matmul_4x8x16");
  EXPECT_EQ(matmul["args"]["workload_key"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(matmul["args"]["output_shapes"], nlohmann::json::parse("[[4, 16]]"));
  EXPECT_EQ(matmul["args"]["flops"], 1024);
  // Quotes and a line break in a node name survive as JSON escapes.
  EXPECT_EQ(kernel_event(trace, 1)["args"]["nodes"][0], "/layer1/act \"1\"\n/Relu");
}

// relu_64_parallel launches one task per participant: with two threads, one
// share on the executor's thread (inside the call's event) and one on the
// pool's worker, on a row of its own that has a thread_name.
TEST(ChromeTrace, AParallelLoopShowsEachThreadsShare) {
  auto exec = load_and_feed(traced_package());
  ASSERT_NE(exec, nullptr);
  auto spans = exec->run_traced();
  ASSERT_TRUE(spans.is_ok()) << spans.status().to_string();
  EXPECT_TRUE((*spans)[0].shares.empty()) << "matmul_4x8x16 is serial";
  const CallSpan& relu = (*spans)[1];
  ASSERT_EQ(relu.shares.size(), 2u);
  const int64_t executor_tid = relu.shares[0].participant == 0 ? relu.shares[0].thread_id : relu.shares[1].thread_id;
  for (const ShareSpan& share : relu.shares) {
    EXPECT_GE(share.start_ns, relu.start_ns);
    EXPECT_GT(share.thread_id, 0);
    if (share.participant == 0)
      EXPECT_LE(share.start_ns + share.duration_ns, relu.start_ns + relu.duration_ns);
    else
      EXPECT_NE(share.thread_id, executor_tid);
  }
  const nlohmann::json trace =
      nlohmann::json::parse(chrome_trace_json(exec->call_descriptions(), *spans, {7, executor_tid, "p", "executor"}));
  expect_valid_chrome_trace(trace, 2);
  size_t pool_events = 0, worker_names = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    pool_events += e["ph"] == "X" && e["cat"] == "pool";
    worker_names += e["ph"] == "M" && e["args"]["name"] == "pool worker 1";
  }
  EXPECT_EQ(pool_events, 2u);
  EXPECT_EQ(worker_names, 1u);
}

// Tracing is off by default: a plain run records no shares anywhere.
TEST(PoolTimeline, RecordsOnlyWhileSet) {
  PoolOptions options;
  options.steal_late_shares = false;  // each participant runs its own share
  ThreadPool pool(2, options);
  PoolTimeline timeline(pool.num_threads());
  auto body = [](int32_t, int32_t, void*) -> int32_t { return 0; };
  pool.run(body, nullptr, 4);
  pool.set_timeline(&timeline);
  pool.run(body, nullptr, 4);
  pool.set_timeline(nullptr);
  pool.run(body, nullptr, 4);
  ASSERT_EQ(timeline.shares.size(), 2u);
  for (const auto& shares : timeline.shares) {
    ASSERT_EQ(shares.size(), 1u) << "one share per participant of the one timed launch";
    EXPECT_LE(shares[0].start_ns, shares[0].end_ns);
  }
  EXPECT_NE(timeline.thread_ids[0], timeline.thread_ids[1]);
}

TEST(ChromeTrace, AnUnwritablePathIsAnIOErrorNamingIt) {
  const Status st = write_chrome_trace("/nonexistent-dir/t.json", {}, {}, {});
  EXPECT_EQ(st.code(), ErrorCode::kIOError);
  EXPECT_NE(st.message().find("/nonexistent-dir/t.json"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera::runtime
