// The correctness check while tuning, end to end: a real kernel with a
// planted bug, built by the builder pool and run by a real worker process,
// is caught as a wrong answer, stored so, and never compiled into a package.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "compiler/codegen/llvm_target.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/op.h"
#include "compiler/model/choose_winograd.h"
#include "records/store.h"
#include "tests/tools/command.h"
#include "tests/tuner/measure/matmul_task.h"
#include "tuner/measure/measurer.h"

namespace tessera::tuner {
namespace {

namespace fs = std::filesystem;

// The test-only schedule bug: after the kernel has written its output, one
// more store adds 1 to the output's last element, where the remainders of
// tiles that do not divide the extents live.
Result<PrimFunc> off_by_one_at_the_end(PrimFunc f) {
  const Buffer& out = f.params.back();
  const Expr last = make_int(out->num_elements() - 1);
  Stmt bump = make_store(out, make_load(out, last) + make_float(1.0), last);
  f.body = make_seq({f.body, bump});
  return f;
}

using test::matmul_task;

// A tiled, vectorized schedule whose tiles do not divide 97 x 101.
Candidate tiled(const Task& task) {
  State s(task.dag);
  EXPECT_TRUE(s.tile(2, {0, 1}, {{8}, {16}}).is_ok());
  return Candidate(s.steps());
}

class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runner = rpc::LocalRunner::start({.num_workers = 1, .threads_per_worker = 2});
    ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }
  std::vector<records::Record> measure(const Task& task, const std::vector<Candidate>& candidates, bool bug,
                                       bool check = true) {
    BuilderOptions bo{.n_parallel = 2};
    if (bug) bo.rewrite_kernel = off_by_one_at_the_end;
    BuilderPool builder(task.target, bo);
    Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 1}, .check_correctness = check});
    auto records = measurer.measure(task, candidates);
    EXPECT_TRUE(records.is_ok()) << records.status().to_string();
    if (check && bug) EXPECT_GT(measurer.last_check_seconds(), 0);
    return records.is_ok() ? std::move(*records) : std::vector<records::Record>{};
  }
  std::unique_ptr<rpc::LocalRunner> runner_;
};

TEST_F(CheckTest, AKernelWrongAtItsLastElementIsAWrongAnswer) {
  Task task = matmul_task(97, 101, 64);  // 9797 outputs: a sampled check
  auto records = measure(task, {tiled(task), Candidate()}, /*bug=*/true);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    EXPECT_EQ(r.error_kind, "wrong-answer") << r.error_message;
    EXPECT_TRUE(r.checked);
    EXPECT_TRUE(r.costs.empty());
    EXPECT_NE(r.error_message.find("1 of "), std::string::npos) << r.error_message;
    EXPECT_NE(r.error_message.find("first at 9796"), std::string::npos) << r.error_message;
  }
}

TEST_F(CheckTest, TheSameKernelsWithoutTheBugPassTheCheck) {
  Task task = matmul_task(97, 101, 64);
  auto records = measure(task, {tiled(task), Candidate()}, /*bug=*/false);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    EXPECT_TRUE(r.ok()) << r.error_kind << ": " << r.error_message;
    EXPECT_TRUE(r.checked);
  }
}

// A float16 task is checked like any other, at float16's precision.
TEST_F(CheckTest, AFloat16TaskIsCheckedAtItsPrecision) {
  Tensor a = placeholder({64}, DType::f16(), "A");
  Tensor b = compute(
      {64}, [&](const Vars& i) { return read(a, {i[0]}) * make_const(DType::f16(), 2); }, "B");
  Task task;
  task.name = "scale_f16";
  task.dag = std::make_shared<const ComputeDAG>(ComputeDAG::make({a, b}).value());
  task.target = host_target();
  task.device_key = "local";
  BuilderPool builder(task.target, {.n_parallel = 1});
  Measurer measurer(builder, *runner_, {.timing = {.number = 1, .repeat = 1}});
  auto records = measurer.measure(task, {Candidate()});
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_TRUE((*records)[0].ok()) << (*records)[0].error_message;
  EXPECT_TRUE((*records)[0].checked) << measurer.unchecked_reason(task.workload_key());
}

// --no-check: the wrong kernel is timed like any other, and its record says
// it was not checked.
TEST_F(CheckTest, WithoutTheCheckAWrongKernelIsTimedAndMarkedUnchecked) {
  Task task = matmul_task(97, 101, 64);
  auto records = measure(task, {tiled(task)}, /*bug=*/true, /*check=*/false);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].ok()) << records[0].error_message;
  EXPECT_FALSE(records[0].checked);
}

// How many lines of `records list` say the record was checked ("yes") or
// not ("no") in the CHECKED column.
std::pair<int, int> checked_column(const std::string& list) {
  int yes = 0, no = 0;
  for (size_t at = list.find(" yes "); at != std::string::npos; at = list.find(" yes ", at + 1)) ++yes;
  for (size_t at = list.find(" no "); at != std::string::npos; at = list.find(" no ", at + 1)) ++no;
  return {yes, no};
}

TEST(TuneCommand, ChecksByDefaultAndNoCheckOptsOut) {
  const fs::path dir = fs::temp_directory_path() / ("tessera_check_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string tune = "tune --op matmul:M=16,N=16,K=16 --trials 4 --batch 4 --repeat 1 --min-repeat-ms 1 --db ";
  test::Output on = test::tessera(tune + (dir / "on.db").string());
  ASSERT_EQ(on.code, 0) << on.text;
  test::Output off = test::tessera(tune + (dir / "off.db").string() + " --no-check");
  ASSERT_EQ(off.code, 0) << off.text;
  EXPECT_NE(on.text.find(", outputs checked;"), std::string::npos) << on.text;
  EXPECT_NE(off.text.find(", outputs not checked (--no-check);"), std::string::npos) << off.text;
  const auto [on_yes, on_no] = checked_column(test::tessera("records list --db " + (dir / "on.db").string()).text);
  EXPECT_GE(on_yes, 4);
  EXPECT_EQ(on_no, 0);
  const auto [off_yes, off_no] = checked_column(test::tessera("records list --db " + (dir / "off.db").string()).text);
  EXPECT_EQ(off_yes, 0);
  EXPECT_GE(off_no, 4);
  test::Output both = test::tessera(tune + (dir / "both.db").string() + " --check --no-check");
  EXPECT_EQ(both.code, 2) << both.text;
  EXPECT_NE(both.text.find("--check and --no-check contradict"), std::string::npos) << both.text;
  fs::remove_all(dir);
}

const fs::path kConvModel = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

// The model's one kernel, as `tessera tune MODEL` and `tessera compile` see it.
Task model_task() {
  auto graph = frontend::import_onnx_file(kConvModel.string());
  EXPECT_TRUE(graph.is_ok()) << graph.status().to_string();
  auto plans = model::tuning_plans(model::prepare_model(*graph).value());
  EXPECT_TRUE(plans.is_ok()) << plans.status().to_string();
  Task t;
  t.name = "conv";
  t.dag = plans->at(0).tasks.at(0).dag;
  t.target = host_target();
  t.device_key = "local";
  return t;
}

TEST_F(CheckTest, AWrongAnswerIsNeverCompiledIntoAPackage) {
  if (!fs::exists(kConvModel)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path dir = fs::temp_directory_path() / ("tessera_check_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string(), package = (dir / "t.tsr").string();
  Task task = model_task();
  State s(task.dag);
  const int stage = static_cast<int>(task.dag->tensors().size()) - 1;
  ASSERT_TRUE(s.split(stage, 3, {2}).is_ok()) << "split the output's last axis (3) by 2";
  Candidate candidate(s.steps());
  auto wrong = measure(task, {candidate}, /*bug=*/true);
  ASSERT_EQ(wrong.size(), 1u);
  ASSERT_EQ(wrong[0].error_kind, "wrong-answer") << wrong[0].error_message;
  {
    auto store = records::Store::open(db);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    ASSERT_TRUE(store->append(wrong).is_ok());
  }
  test::Output list = test::tessera("records list --db " + db);
  EXPECT_NE(list.text.find("yes"), std::string::npos) << list.text;
  EXPECT_NE(list.text.find("wrong-answer"), std::string::npos) << list.text;
  // The only record is wrong: the kernel comes from its fallback.
  test::Output c = test::tessera("compile " + kConvModel.string() + " --db " + db + " -o " + package);
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("1 kernels, 0 scheduled from records"), std::string::npos) << c.text;
  // A correct measurement of the same schedule is used.
  auto right = measure(task, {candidate}, /*bug=*/false);
  ASSERT_EQ(right.size(), 1u);
  ASSERT_TRUE(right[0].ok()) << right[0].error_message;
  {
    auto store = records::Store::open(db);
    ASSERT_TRUE(store.is_ok() && store->append(right).is_ok());
  }
  c = test::tessera("compile " + kConvModel.string() + " --db " + db + " -o " + package);
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("1 kernels, 1 scheduled from records"), std::string::npos) << c.text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::tuner
