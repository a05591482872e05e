// Padded tiles (PadTileStep): a stage computed at a tile computes the whole
// tile where it hangs over the tensor's edge, without a guard; its reads of
// whole tensors are clamped, or masked along a vectorized loop; the final
// store alone is guarded. Interpreted and compiled, it computes what the
// unscheduled kernel computes.
#include <gtest/gtest.h>

#include "compiler/ir/functor.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "runtime/thread_pool.h"
#include "tests/compiler/codegen/run_native.h"
#include "tests/compiler/lower/lower_test_util.h"
#include "tests/compiler/ops/op_test_util.h"

namespace tessera {
namespace {

// Counts the guards (Ifs) around stores to one buffer, and predicated loads.
class GuardCounter final : public IRVisitor {
 public:
  explicit GuardCounter(std::string buffer) : buffer_(std::move(buffer)) {}
  int guarded_stores = 0, stores = 0, predicated_loads = 0;

 protected:
  using IRVisitor::visit;
  void visit(const IfThenElseNode* op) override {
    ++depth_;
    IRVisitor::visit(op);
    --depth_;
  }
  void visit(const StoreNode* op) override {
    if (op->buffer->name == buffer_) {
      ++stores;
      if (depth_ > 0 || op->predicate.defined()) ++guarded_stores;
    }
    IRVisitor::visit(op);
  }
  void visit(const LoadNode* op) override {
    if (op->predicate.defined()) ++predicated_loads;
    IRVisitor::visit(op);
  }

 private:
  std::string buffer_;
  int depth_ = 0;
};

// C (m x n) in blocks of 8 x 8 (outer extents rounded up), C.local computed
// at each block, its columns vectorized, its rows unrolled.
State blocked_matmul(int64_t m, int64_t n, int64_t k, bool padded) {
  State s(test::matmul_dag(m, n, k));
  EXPECT_TRUE(s.cache_write(s.stage_index("C")).is_ok());
  const int c = s.stage_index("C");
  EXPECT_TRUE(s.tile(c, {0, 1}, {{8}, {8}}).is_ok());  // i.0 j.0 i.1 j.1
  const int local = s.stage_index("C.local");
  EXPECT_TRUE(s.compute_at(local, c, 1).is_ok());
  if (padded) EXPECT_TRUE(s.pad_tile(local).is_ok());
  // C.local: i j k -> k i j, j vectorized, i unrolled.
  EXPECT_TRUE(s.reorder(local, {2, 0, 1}).is_ok());
  EXPECT_TRUE(s.unroll(local, 1).is_ok());
  EXPECT_TRUE(s.vectorize(local, 2).is_ok());
  return s;
}

TEST(PadTile, OnlyTheFinalStoreIsGuarded) {
  for (bool padded : {false, true}) {
    State s = blocked_matmul(13, 11, 7, padded);
    auto f = lower(s, "k", LowerOptions{.skip = {"partition_loops"}});
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    GuardCounter local("C.local");
    local(f->body);
    GuardCounter out("C");
    out(f->body);
    EXPECT_GT(local.stores, 0);
    if (padded) {
      EXPECT_EQ(local.guarded_stores, 0) << "padded tile";
      // B's columns past 11 are read under a mask; A's rows past 13 are clamped.
      EXPECT_GT(local.predicated_loads, 0);
    } else {
      EXPECT_EQ(local.guarded_stores, local.stores) << "guarded tile";
    }
    EXPECT_EQ(out.guarded_stores, out.stores);
  }
}

TEST(PadTile, ComputesTheUnscheduledResultInterpretedAndCompiled) {
  runtime::ThreadPool pool(2);
  // Remainders of 1, tiles longer than the tensor, and dividing extents.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{13, 11, 7}, {9, 17, 3}, {5, 3, 4}, {16, 16, 5}}) {
    const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    auto dag = test::matmul_dag(m, n, k);
    const auto inputs = test::random_inputs(*dag);
    auto want = test::run(State(dag), inputs);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    State s = blocked_matmul(m, n, k, true);
    auto interpreted = test::run(s, inputs);
    ASSERT_TRUE(interpreted.is_ok()) << shape << ": " << interpreted.status().to_string();
    EXPECT_TRUE(test::all_close(*interpreted, *want, test::kSumRtol, test::kSumAtol)) << shape;
    auto native = test::run_native(s, inputs, pool);
    ASSERT_TRUE(native.is_ok()) << shape << ": " << native.status().to_string();
    EXPECT_TRUE(test::all_close(*native, *want, test::kSumRtol, test::kSumAtol)) << shape;
  }
}

// dense's W[n, k] packed by a factor that does not divide N: the padded tile
// reads the zero padding with neither guard nor mask.
TEST(PadTile, ReadsAPaddedPackedLayoutWithoutAMask) {
  auto inst = ops::parse_op_spec("dense:M=5,N=13,K=6");
  ASSERT_TRUE(inst.is_ok()) << inst.status().to_string();
  auto dag = inst->dag;
  State s(dag);
  const std::string out = dag->args().back()->name;
  ASSERT_TRUE(s.cache_write(s.stage_index(out)).is_ok());
  const int o = s.stage_index(out);
  ASSERT_TRUE(s.tile(o, {0, 1}, {{4}, {8}}).is_ok());
  const int local = s.stage_index(out + ".local");
  ASSERT_TRUE(s.compute_at(local, o, 1).is_ok());
  ASSERT_TRUE(s.pad_tile(local).is_ok());
  ASSERT_TRUE(s.reorder(local, {2, 0, 1}).is_ok());
  ASSERT_TRUE(s.vectorize(local, 2).is_ok());
  const int w = s.stage_index(dag->args()[1]);
  ASSERT_TRUE(s.pack_layout(w, 0, 8).is_ok());  // 13 columns in two blocks of 8

  auto f = lower(s, "k", LowerOptions{.skip = {"partition_loops"}});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  GuardCounter counter(out + ".local");
  counter(f->body);
  EXPECT_EQ(counter.guarded_stores, 0);
  EXPECT_EQ(counter.predicated_loads, 0) << "W is read from its padding, X's rows clamped";

  const auto inputs = test::random_inputs(*dag);
  auto want = test::run(State(dag), inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  runtime::ThreadPool pool(2);
  auto interpreted = test::run(s, inputs);  // packs W itself
  ASSERT_TRUE(interpreted.is_ok()) << interpreted.status().to_string();
  EXPECT_TRUE(test::all_close(*interpreted, *want, test::kSumRtol, test::kSumAtol));
  auto native = test::run_native(s, inputs, pool);
  ASSERT_TRUE(native.is_ok()) << native.status().to_string();
  EXPECT_TRUE(test::all_close(*native, *want, test::kSumRtol, test::kSumAtol));
}

TEST(PadTile, RejectsAStageThatIsNotComputedAtATile) {
  State s(test::matmul_dag(13, 11, 7));
  const std::string before = s.to_string();
  Status st = s.pad_tile(s.stage_index("C"));
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidSchedule);
  EXPECT_NE(st.message().find("pad_tile"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("only a tile is padded"), std::string::npos) << st.message();
  EXPECT_EQ(s.to_string(), before);
  EXPECT_FALSE(s.pad_tile(s.stage_index("A")).is_ok()) << "an input";
  EXPECT_FALSE(s.pad_tile(99).is_ok());
}

TEST(PadTile, ReplaysFromJsonAndComputeRootUndoesIt) {
  State s = blocked_matmul(13, 11, 7, true);
  auto steps = steps_from_json(steps_to_json(s.steps()));
  ASSERT_TRUE(steps.is_ok()) << steps.status().to_string();
  auto replayed = replay(s.dag_ptr(), *steps);
  ASSERT_TRUE(replayed.is_ok()) << replayed.status().to_string();
  EXPECT_EQ(replayed->to_string(), s.to_string());
  EXPECT_NE(s.to_string().find("padded"), std::string::npos) << s.to_string();
  ASSERT_TRUE(s.compute_root(s.stage_index("C.local")).is_ok());
  EXPECT_EQ(s.to_string().find("padded"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace tessera
