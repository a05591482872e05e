// Issue 19, plausible results only: a worker that reports the impossible (1 ns
// for a matmul, or ok with no costs) produces a "measurement-error" record
// naming it, an infrastructure error that is never the best record.
#include "tuner/measure/plausibility.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <thread>

#include "compiler/ir/op.h"
#include "compiler/ops/op_spec.h"
#include "compiler/space/knob/templates.h"
#include "compiler/te/tensor.h"
#include "records/store.h"
#include "rpc/runner.h"
#include "rpc/tracker.h"
#include "tests/tuner/measure/matmul_task.h"
#include "tuner/knob_policy.h"
#include "tuner/measure/measurer.h"
#include "tuner/tuner.h"

namespace tessera::tuner {
namespace {

TEST(Plausibility, TheBoundComesFromTheTargetAndRefusesOnlyTheImpossible) {
  Target one = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=1").value();
  Target eight = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=8").value();
  // float32 on AVX-512: 16 lanes x 2 (FMA) x 2 pipes x 6 GHz x 1.25 a core.
  EXPECT_DOUBLE_EQ(peak_ops_bound(one, 32, 0), 16 * 2 * 2 * 6e9 * 1.25);
  EXPECT_DOUBLE_EQ(peak_ops_bound(eight, 32, 0), 8 * peak_ops_bound(one, 32, 0));
  EXPECT_DOUBLE_EQ(peak_ops_bound(one, 8, 0), 4 * peak_ops_bound(one, 32, 0));  // int8 dot products
  EXPECT_DOUBLE_EQ(peak_ops_bound(one, 32, 4), peak_ops_bound(eight, 32, 4));   // the worker's threads win
  // AMX's tile products: 2,048 int8 operations a core and cycle.
  Target amx = one;
  amx.amx_int8 = amx.amx_bf16 = true;
  EXPECT_DOUBLE_EQ(peak_ops_bound(amx, 32, 0), 2048 * 6e9 * 1.25);
  KernelWork matmul{2.0 * 256 * 256 * 256, 256 * 256 * 4, 32};
  EXPECT_FALSE(implausible_result(one, matmul, {1e-3, 2e-3}, 0, "w").has_value());  // 33 GFLOP/s: a real kernel
  // 670 GFLOP/s is a fine kernel on 8 cores, impossible on one.
  EXPECT_FALSE(implausible_result(eight, matmul, {5e-5}, 0, "w").has_value());
  auto one_core = implausible_result(one, matmul, {5e-5}, 0, "w");
  ASSERT_TRUE(one_core.has_value());
  EXPECT_NE(one_core->find("1 core(s)"), std::string::npos) << *one_core;
  auto fast = implausible_result(one, matmul, {1e-3, 1e-9}, 0, "liar");
  ASSERT_TRUE(fast.has_value());
  EXPECT_NE(fast->find("worker 'liar'"), std::string::npos) << *fast;
  EXPECT_NE(fast->find("GFLOP/s"), std::string::npos) << *fast;
  EXPECT_TRUE(implausible_result(one, matmul, {}, 0, "w").has_value());
  EXPECT_TRUE(implausible_result(one, matmul, {0.0}, 0, "w").has_value());
}

TEST(Plausibility, AKernelWithoutArithmeticIsBoundedByTheBytesItStores) {
  Target one = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512 -num-cores=1").value();
  EXPECT_DOUBLE_EQ(store_bytes_bound(one, 0), 2 * 64 * 6e9 * 1.25);
  KernelWork copy{0, 64.0 * 1024 * 1024, 32};                               // a 64 MiB transpose
  EXPECT_FALSE(implausible_result(one, copy, {4e-3}, 0, "w").has_value());  // 17 GB/s
  auto fast = implausible_result(one, copy, {1e-6}, 0, "w");                // 67 TB/s
  ASSERT_TRUE(fast.has_value());
  EXPECT_NE(fast->find("GB/s of output"), std::string::npos) << *fast;
}

TEST(Plausibility, KernelWorkCountsTheOutputsAndTheNarrowestType) {
  Tensor a = placeholder({64, 32}, DType::i8(), "A");
  Tensor b = compute(
      {64, 32},
      [&](const Vars& i) {
        return cast(DType::f32(), read(a, {i[0], i[1]})) * make_float(2.0, DType::f32());
      },
      "B");
  const ComputeDAG dag = ComputeDAG::make({a, b}).value();
  const KernelWork w = KernelWork::of(dag);
  EXPECT_DOUBLE_EQ(w.output_bytes, 64 * 32 * 4);
  EXPECT_EQ(w.narrowest_bits, 8);
  EXPECT_DOUBLE_EQ(w.flops, dag.flop_count());
}

// A product of packed words multiplies narrower elements than its words:
// matmul_u8s8 on int32 words of four u8 / s8 bytes is bounded as 8-bit work
// (a Zen 5 guest's 1,398 GOP/s of vpdpbusd on two cores was refused as
// beyond the 960 GFLOP/s of 32-bit lanes), matmul_bf16 as 16-bit.
TEST(Plausibility, PackedDotProductsAreBoundedByTheElementsTheyMultiply) {
  auto int8 = ops::parse_op_spec("matmul_u8s8:M=64,N=64,K=64");
  auto bf16 = ops::parse_op_spec("matmul_bf16:M=64,N=64,K=64");
  ASSERT_TRUE(int8.is_ok() && bf16.is_ok());
  EXPECT_EQ(KernelWork::of(*int8->dag).narrowest_bits, 8);
  EXPECT_EQ(KernelWork::of(*bf16->dag).narrowest_bits, 16);
  Target zen5 = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver5 -num-cores=2").value();
  const KernelWork int8_work = KernelWork::of(*int8->dag);
  const double seconds = int8_work.flops / 1398e9;  // the rate that was refused
  EXPECT_FALSE(implausible_result(zen5, int8_work, {seconds}, 2, "w").has_value());
  EXPECT_TRUE(implausible_result(zen5, int8_work, {seconds / 10}, 2, "w").has_value());
}

// A worker on a real farm that answers every job with `costs`, as "liar".
class LyingWorker {
 public:
  LyingWorker(const std::string& endpoint, std::vector<double> costs) : costs_(std::move(costs)) {
    thread_ = std::thread([this, endpoint] { serve(endpoint); });
  }
  ~LyingWorker() {
    stop_ = true;
    thread_.join();
  }
  int answered() const { return answered_.load(); }

 private:
  void serve(const std::string& endpoint) {
    rpc::Context ctx;
    rpc::Socket s = rpc::Socket::create(ctx.get(), ZMQ_DEALER, 1 << 30).value();
    const std::string routing = "w:liar";
    (void)s.set(ZMQ_ROUTING_ID, routing.data(), routing.size(), "id");
    (void)s.connect(endpoint);
    rpc::pb::Envelope reg;
    auto* r = reg.mutable_register_();
    r->set_worker_id("liar");
    r->set_device_key("local");
    r->set_target("llvm");
    r->set_max_jobs(4);
    r->set_incarnation("1");
    (void)rpc::send_envelope(s, reg);
    while (!stop_) {
      zmq_pollitem_t item = {s.get(), 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 50) <= 0) continue;
      while (auto msg = rpc::recv_message(s)) {
        rpc::pb::Envelope env;
        if (msg->frames.size() != 1 || !rpc::parse_envelope(msg->frames[0], &env) || !env.has_dispatch()) continue;
        rpc::pb::Envelope out;
        auto* result = out.mutable_result();
        result->set_job_id(env.dispatch().job_id());
        result->set_session_id(env.dispatch().session_id());
        result->set_attempt(env.dispatch().attempt());
        result->set_error(rpc::pb::OK);
        for (double c : costs_) result->add_costs_s(c);
        result->set_worker_id("liar");
        answered_.fetch_add(1);  // before the send: the test may look as soon as the result is in
        (void)rpc::send_envelope(s, out);
      }
    }
  }
  std::vector<double> costs_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

// A plaintext tracker on a private ipc socket, served from its own thread.
class Farm {
 public:
  Farm() {
    char templ[] = "/tmp/tessera-plausible-XXXXXX";
    dir_ = ::mkdtemp(templ);
    rpc::TrackerOptions o;
    o.bind = "ipc://" + dir_ + "/t";
    o.security.insecure = true;
    tracker_ = std::make_unique<rpc::Tracker>(o);
    EXPECT_TRUE(tracker_->bind().is_ok());
    thread_ = std::thread([this] { (void)tracker_->run(stop_); });
  }
  ~Farm() {
    stop_ = true;
    thread_.join();
    (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string endpoint() const { return tracker_->endpoint(); }
  std::string dir() const { return dir_; }

 private:
  std::string dir_;
  std::unique_ptr<rpc::Tracker> tracker_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client of `farm`'s tracker for the "local" key.
Result<std::unique_ptr<rpc::RpcRunner>> connect_to(const Farm& farm) {
  rpc::RpcRunnerOptions ro;
  ro.tracker = farm.endpoint();
  ro.security.insecure = true;
  ro.device_key = "local";
  return rpc::RpcRunner::connect(ro);
}

// Whether `n` workers of the key have registered within 10 s.
bool wait_for_workers(rpc::RpcRunner& runner, int n) {
  for (int i = 0; i < 500; ++i) {
    auto workers = runner.count_workers();
    if (workers.is_ok() && *workers >= n) return true;
    ::usleep(20000);
  }
  return false;
}

void measure_with_liar(const std::vector<double>& lie, const std::string& expect_in_message) {
  Farm farm;
  LyingWorker liar(farm.endpoint(), lie);
  auto runner = connect_to(farm);
  ASSERT_TRUE(runner.is_ok());
  ASSERT_TRUE(wait_for_workers(**runner, 1));

  Task task = test::matmul_task(128, 128, 128);
  BuilderPool builder(task.target, {.n_parallel = 1});
  Measurer measurer(builder, **runner, {.timing = {.number = 1, .repeat = 2}, .check_correctness = false});
  auto records = measurer.measure(task, {Candidate()});
  ASSERT_TRUE(records.is_ok()) << records.status().to_string();
  ASSERT_EQ(records->size(), 1u);
  const records::Record& r = (*records)[0];
  EXPECT_EQ(r.error_kind, kMeasurementError);
  EXPECT_TRUE(r.infrastructure);
  EXPECT_TRUE(r.costs.empty());
  EXPECT_EQ(r.worker, "liar");
  EXPECT_NE(r.error_message.find(expect_in_message), std::string::npos) << r.error_message;
  EXPECT_EQ(liar.answered(), 1);

  // Stored, it is an infrastructure error: never the best, never a measurement of its steps.
  auto store = records::Store::open(farm.dir() + "/r.db");
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  ASSERT_TRUE(store->append(*records).is_ok());
  EXPECT_EQ(records::best_of(store->list({}).value()), nullptr);
  EXPECT_TRUE(store->best_k(r.workload_key, r.target, 5).value().empty());
  EXPECT_FALSE(store->measured(r.workload_key, r.target, r.steps_json).value());
}

TEST(Plausibility, AWorkerReportingOneNanosecondIsAMeasurementErrorNeverChosen) {
  measure_with_liar({1e-9, 1e-9}, "GFLOP/s");
}

TEST(Plausibility, AnOkWithoutCostsIsAMeasurementErrorNotAnAbortedRun) {
  measure_with_liar({}, "no costs");
}

// The tuner measures a candidate again with the liar to avoid
// (Candidate::avoid_workers): another worker of the key takes it, though the
// idle liar comes first in the tracker's order.
TEST(Plausibility, AnImplausibleResultIsMeasuredAgainElsewhere) {
  Farm farm;
  LyingWorker liar(farm.endpoint(), {1e-9});
  auto runner = connect_to(farm);
  ASSERT_TRUE(runner.is_ok());
  ASSERT_TRUE(wait_for_workers(**runner, 1));
  Task task = test::matmul_task(64, 64, 64);
  BuilderPool builder(task.target, {.n_parallel = 1});
  Measurer measurer(builder, **runner, {.timing = {.number = 1, .repeat = 2}, .check_correctness = false});
  auto first = measurer.measure(task, {Candidate()});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ((*first)[0].error_kind, kMeasurementError);

  const std::string worker = rpc::executable_dir() + "/tessera-worker";
  const std::string endpoint = farm.endpoint(), temp = farm.dir();
  const pid_t honest = ::fork();
  if (honest == 0) {
    ::execl(worker.c_str(), worker.c_str(), "--tracker", endpoint.c_str(), "--key", "local", "--id", "zz-honest",
            "--insecure", "--threads", "1", "--temp-dir", temp.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE(wait_for_workers(**runner, 2));
  Candidate again;
  again.avoid_workers = {(*first)[0].worker};
  auto second = measurer.measure(task, {again, Candidate()});
  ::kill(honest, SIGTERM);
  ::waitpid(honest, nullptr, 0);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_TRUE((*second)[0].ok()) << (*second)[0].error_message;
  EXPECT_EQ((*second)[0].worker, "zz-honest");
  EXPECT_EQ((*second)[1].worker, "liar");  // without the wish, the liar (first in order, idle) takes it
  EXPECT_EQ(liar.answered(), 2);
}

// Where every worker there is finds a candidate's result implausible, the
// tuner gives it up after kMaxTimesLost measurements and counts it against
// the budget: the tune ends. (Retried without end, a Zen 5 guest's fastest
// int8 candidates, refused by a bound too low for them, kept a 200-trial
// tune measuring 5,453 of them.)
TEST(Plausibility, ATuneGivesUpCandidatesLostTimeAfterTimeAndEnds) {
  Farm farm;
  LyingWorker liar(farm.endpoint(), {1e-9});
  auto runner = connect_to(farm);
  ASSERT_TRUE(runner.is_ok());
  ASSERT_TRUE(wait_for_workers(**runner, 1));
  Task task = test::matmul_task(64, 64, 64);
  task.dag = ops::parse_op_spec("matmul:M=64,N=64,K=64").value().dag;  // the template's own form
  const KnobTemplate* tmpl = find_template("matmul");
  ASSERT_NE(tmpl, nullptr);
  std::vector<std::unique_ptr<SearchPolicy>> policies;
  policies.push_back(std::make_unique<KnobPolicy>(
      *tmpl, task.dag, task.target, tmpl->define(*task.dag, task.target).value(), KnobStrategy::kRandom, nullptr, 7));
  BuilderPool builder(task.target, {.n_parallel = 1});
  Measurer measurer(builder, **runner, {.timing = {.number = 1, .repeat = 1}, .check_correctness = false});
  std::vector<std::string> said;
  Tuner tuner({task}, std::move(policies), measurer, nullptr,
              {.trials = 4,
               .batch_size = 4,
               .measure_default = false,
               .worker_wait_s = 120,
               .on_wait = [&](const std::string& line) { said.push_back(line); }});
  auto summaries = tuner.run(nullptr, nullptr);
  ASSERT_TRUE(summaries.is_ok()) << summaries.status().to_string();
  const TaskSummary& s = (*summaries)[0];
  EXPECT_EQ(s.trials, 0);
  EXPECT_EQ(s.given_up, 4);
  EXPECT_EQ(s.infrastructure_errors, 4 * kMaxTimesLost);
  EXPECT_EQ(liar.answered(), 4 * kMaxTimesLost);
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said[0].find("given up"), std::string::npos) << said[0];
}

}  // namespace
}  // namespace tessera::tuner
