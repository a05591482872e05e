#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace tessera::runtime {
namespace {

PackageValue value(const char* name, ValueKind kind, std::vector<int64_t> shape) {
  PackageValue v{name, kind, DType::f32(), std::move(shape), ""};
  if (kind == ValueKind::kConstant) v.data.assign(static_cast<size_t>(v.nbytes()), '\0');
  return v;
}

int64_t aligned(int64_t n) {
  return (std::max<int64_t>(n, 1) + 63) / 64 * 64;
}

// No two buffers live at the same time share a byte; every offset is aligned;
// the arena holds every buffer.
void expect_valid(const std::vector<LiveInterval>& buffers, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    ASSERT_GE(plan.offsets[i], 0);
    ASSERT_EQ(plan.offsets[i] % kArenaAlignment, 0);
    ASSERT_LE(plan.offsets[i] + buffers[i].nbytes, plan.arena_bytes);
    for (size_t j = 0; j < i; ++j) {
      const bool live_together = buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last;
      const bool share_bytes = plan.offsets[i] < plan.offsets[j] + aligned(buffers[j].nbytes) &&
                               plan.offsets[j] < plan.offsets[i] + aligned(buffers[i].nbytes);
      ASSERT_FALSE(live_together && share_bytes) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlan, ChainReusesMemory) {
  // a -> b -> c -> d -> e through four calls: at most two are live at once.
  PackageContents c;
  c.library = "lib";
  c.values = {value("a", ValueKind::kInput, {256}), value("b", ValueKind::kIntermediate, {256}),
              value("c", ValueKind::kIntermediate, {256}), value("d", ValueKind::kIntermediate, {256}),
              value("e", ValueKind::kOutput, {256})};
  c.calls = {{"f", {0, 1}}, {"f", {1, 2}}, {"f", {2, 3}}, {"f", {3, 4}}};
  c.inputs = {0};
  c.outputs = {4};
  auto plan = plan_graph_memory(c);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->total_bytes, 3 * 1024);
  EXPECT_EQ(plan->arena_bytes, 2 * 1024);
  EXPECT_LT(plan->arena_bytes, plan->total_bytes);
  EXPECT_EQ(plan->offsets[0], -1);  // inputs and outputs are not in the arena
  EXPECT_EQ(plan->offsets[4], -1);
  EXPECT_EQ(plan->offsets[1], plan->offsets[3]);  // d takes b's place
  EXPECT_NE(plan->offsets[1], plan->offsets[2]);
}

TEST(MemoryPlan, ConstantsAndUnusedIntermediatesAreNotPlaced) {
  PackageContents c;
  c.library = "lib";
  c.values = {value("w", ValueKind::kConstant, {4}), value("t", ValueKind::kIntermediate, {4}),
              value("unused", ValueKind::kIntermediate, {1000})};
  c.calls = {{"f", {0, 1}}};
  auto plan = plan_graph_memory(c);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->offsets[0], -1);
  EXPECT_EQ(plan->offsets[1], 0);
  EXPECT_EQ(plan->offsets[2], -1);
  EXPECT_EQ(plan->arena_bytes, 64);
  EXPECT_EQ(plan->total_bytes, 16);
}

TEST(MemoryPlan, BuffersLiveInTheSameCallDoNotShare) {
  // One call reads x and writes y: they must not alias.
  const std::vector<LiveInterval> buffers = {{100, 0, 1}, {100, 1, 2}};
  const MemoryPlan plan = plan_intervals(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.arena_bytes, 256);
}

TEST(MemoryPlan, SmallBufferFillsTheBestFittingGap) {
  // Short-lived buffers (B, D) leave gaps of 4096 and 1536 bytes between
  // long-lived ones (A, C, E); the last, smallest buffer F is live only
  // after B and D and takes the tighter gap.
  const std::vector<LiveInterval> buffers = {{8192, 0, 3}, {4096, 0, 0}, {2048, 0, 3},
                                             {1536, 0, 0}, {1024, 0, 3}, {1000, 1, 2}};
  const MemoryPlan plan = plan_intervals(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.offsets[5], plan.offsets[3]);
  EXPECT_EQ(plan.arena_bytes, 8192 + 4096 + 2048 + 1536 + 1024);
}

TEST(MemoryPlan, EmptyBuffersStillGetDistinctAddresses) {
  const std::vector<LiveInterval> buffers = {{0, 0, 0}, {0, 0, 0}};
  const MemoryPlan plan = plan_intervals(buffers);
  expect_valid(buffers, plan);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(MemoryPlan, NoPlanOverlapsLiveBuffersOnRandomGraphs) {
  std::mt19937 rng(7);
  for (int graph = 0; graph < 300; ++graph) {
    const int num_calls = 1 + static_cast<int>(rng() % 40);
    const int num_buffers = static_cast<int>(rng() % 60);
    std::vector<LiveInterval> buffers;
    int64_t peak_live = 0;
    for (int i = 0; i < num_buffers; ++i) {
      const int32_t a = static_cast<int32_t>(rng() % num_calls);
      const int32_t b = static_cast<int32_t>(rng() % num_calls);
      const int64_t size = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 64) : rng() % 100000;
      buffers.push_back({size, std::min(a, b), std::max(a, b)});
    }
    for (int call = 0; call < num_calls; ++call) {
      int64_t live = 0;
      for (const LiveInterval& b : buffers) live += (b.first <= call && call <= b.last) ? aligned(b.nbytes) : 0;
      peak_live = std::max(peak_live, live);
    }
    const MemoryPlan plan = plan_intervals(buffers);
    expect_valid(buffers, plan);
    // No plan can beat the most bytes live at one call; a sane one stays
    // within the sum of the buffers.
    EXPECT_GE(plan.arena_bytes, peak_live);
    int64_t sum = 0;
    for (const LiveInterval& b : buffers) sum += aligned(b.nbytes);
    EXPECT_LE(plan.arena_bytes, sum);
  }
}

TEST(MemoryPlan, RandomGraphPlansNeverOverlapThroughThePackagePath) {
  std::mt19937 rng(11);
  for (int graph = 0; graph < 100; ++graph) {
    PackageContents c;
    c.library = "lib";
    const int n = 2 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      c.values.push_back(value("", ValueKind::kIntermediate, {1 + static_cast<int64_t>(rng() % 5000)}));
    }
    const int calls = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < calls; ++i) {
      KernelCall call{"k", {}};
      for (int a = 0, na = 1 + static_cast<int>(rng() % 4); a < na; ++a) {
        call.args.push_back(static_cast<int32_t>(rng() % n));
      }
      c.calls.push_back(call);
    }
    auto plan = plan_graph_memory(c);
    ASSERT_TRUE(plan.is_ok());
    // Rebuild the intervals independently and check them against the plan.
    std::vector<LiveInterval> buffers;
    std::vector<int64_t> offsets;
    for (int id = 0; id < n; ++id) {
      int32_t first = -1, last = -1;
      for (int i = 0; i < calls; ++i) {
        for (int32_t a : c.calls[i].args) {
          if (a != id) continue;
          if (first < 0) first = i;
          last = i;
        }
      }
      if (first < 0) {
        EXPECT_EQ(plan->offsets[id], -1);
        continue;
      }
      buffers.push_back({c.values[id].nbytes(), first, last});
      offsets.push_back(plan->offsets[id]);
    }
    MemoryPlan sub{offsets, plan->arena_bytes, plan->total_bytes};
    expect_valid(buffers, sub);
  }
}

}  // namespace
}  // namespace tessera::runtime
