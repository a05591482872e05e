// ONNX backend node conformance: every test of Debian's libonnx-testdata
// (data/node/*/) through import -> plan -> native compile -> graph executor
// (2 threads), outputs compared with the expected .pb files.
//
//   onnx_node_conformance [--dir DIR] [--jobs N] [--min-pass-rate R] [--min-passed N] [--verbose]
//                         [name-substring...]
//
// Each test runs in a forked child (at most --jobs at once), so a crash or a
// hang is one failed test, not a lost run. Classes:
//   passed       outputs match (tolerance: kNodeTestTolerance);
//   unsupported  the model has an operator that is not on
//                supported_onnx_ops() (or of another domain), or a graph
//                input/output that is not a tensor or whose element type
//                Tessera has no DType for (unsupported_reason(); checked
//                before anything runs);
//   failed       everything else: import errors of supported operators,
//                plan/compile/load/run errors, wrong shapes or values,
//                crashes, time-outs.
// Parameter inputs (shapes, axes, pads, scales, ...) are bound as constants
// (is_parameter_input); data inputs are fed at run time.
// The last line reads `N passed, M failed, K unsupported`; the exit status is
// 0 when passed / (passed + failed) >= --min-pass-rate and passed >=
// --min-passed (so that CI notices when a count falls), 77 (skipped) when the
// test data is not installed.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/frontend/onnx_node_test_util.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using frontend::test::NodeTestCase;

enum class Verdict : char { kPassed = 'P', kFailed = 'F', kUnsupported = 'U' };

struct Outcome {
  Verdict verdict = Verdict::kFailed;
  std::string reason;
};

Outcome failed(const std::string& step, const Status& st) {
  return {Verdict::kFailed, step + ": " + st.message()};
}

Result<runtime::NDArray> array_of(const graph::Constant& c) {
  TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a, runtime::NDArray::create(c.shape, c.dtype));
  if (!c.bytes.empty()) std::memcpy(a.raw_data(), c.bytes.data(), c.bytes.size());
  return a;
}

Outcome run_test(const fs::path& dir) {
  auto tc = frontend::test::load_node_test(dir);
  if (!tc.is_ok()) return failed("test data", tc.status());
  if (!tc->unsupported.empty()) return {Verdict::kUnsupported, tc->unsupported};
  auto g = frontend::import_onnx_file(tc->model.string(), tc->options);
  if (!g.is_ok()) {
    // The file's path starts the message; the test's name says it already.
    std::string msg = g.status().message();
    const std::string prefix = tc->model.string() + ": ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    return {Verdict::kFailed, "import: " + msg};
  }
  auto plan = model::plan_model(*g);
  if (!plan.is_ok()) return failed("plan", plan.status());
  model::CompileOptions co;
  co.jobs = 1;  // the runner already runs tests side by side
  auto compiled = model::compile_model(*plan, host_target(), co);
  if (!compiled.is_ok()) return failed("compile", compiled.status());
  runtime::ExecutorOptions eo;
  eo.num_threads = 2;
  auto exec = runtime::GraphExecutor::load(compiled->package, eo);
  if (!exec.is_ok()) return failed("load", exec.status());
  for (const runtime::TensorInfo& in : (*exec)->input_info()) {
    auto it = tc->inputs.find(in.name);
    if (it == tc->inputs.end()) return {Verdict::kFailed, "input '" + in.name + "' has no data"};
    auto a = array_of(it->second);
    if (!a.is_ok()) return failed("input '" + in.name + "'", a.status());
    Status st = (*exec)->set_input(in.name, *a);
    if (!st.is_ok()) return failed("set_input", st);
  }
  if (Status st = (*exec)->run(); !st.is_ok()) return failed("run", st);
  const std::vector<std::string> names = (*exec)->output_names();
  if (names.size() != tc->outputs.size())
    return {Verdict::kFailed, std::to_string(names.size()) + " outputs, want " + std::to_string(tc->outputs.size())};
  for (size_t i = 0; i < names.size(); ++i) {
    auto y = (*exec)->get_output(names[i]);
    if (!y.is_ok()) return failed("get_output", y.status());
    graph::Constant got{y->dtype(), y->shape(), std::vector<uint8_t>(static_cast<size_t>(y->nbytes()))};
    if (!got.bytes.empty()) std::memcpy(got.bytes.data(), y->raw_data(), got.bytes.size());
    if (Status st = frontend::test::compare_output(i, got, tc->outputs[i]); !st.is_ok())
      return failed("wrong result", st);
  }
  return {Verdict::kPassed, ""};
}

// One forked test in flight.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::string name;
  std::string out;
  std::chrono::steady_clock::time_point start;
};

Child spawn(const fs::path& dir) {
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("pipe");
    std::exit(2);
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    close(fds[0]);
    const Outcome o = run_test(dir);
    std::string msg(1, static_cast<char>(o.verdict));
    msg += o.reason.substr(0, 4000);
    for (size_t off = 0; off < msg.size();) {
      const ssize_t n = ::write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0], dir.filename().string(), "", std::chrono::steady_clock::now()};
}

// Reads what the child wrote and reaps it; a child that died or wrote nothing
// failed.
Outcome finish(Child& c, bool timed_out) {
  if (timed_out) kill(c.pid, SIGKILL);
  char buf[4096];
  for (ssize_t n; (n = ::read(c.fd, buf, sizeof buf)) > 0;) c.out.append(buf, static_cast<size_t>(n));
  close(c.fd);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (timed_out) return {Verdict::kFailed, "timed out"};
  if (WIFSIGNALED(status)) return {Verdict::kFailed, std::string("crashed: ") + strsignal(WTERMSIG(status))};
  if (c.out.empty()) return {Verdict::kFailed, "exited without a result (status " + std::to_string(status) + ")"};
  return {static_cast<Verdict>(c.out[0]), c.out.substr(1)};
}

std::string one_line(std::string s, size_t max) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  fs::path root = frontend::test::kNodeTestDir;
  int jobs = 2;
  double min_rate = 0.95;
  int min_passed = 0;
  double timeout_s = 120;
  bool verbose = false;
  std::vector<std::string> filters;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc)
      root = argv[++i];
    else if (a == "--jobs" && i + 1 < argc)
      jobs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--min-pass-rate" && i + 1 < argc)
      min_rate = std::atof(argv[++i]);
    else if (a == "--min-passed" && i + 1 < argc)
      min_passed = std::atoi(argv[++i]);
    else if (a == "--timeout" && i + 1 < argc)
      timeout_s = std::atof(argv[++i]);
    else if (a == "--verbose")
      verbose = true;
    else
      filters.push_back(a);
  }
  if (!fs::is_directory(root)) {
    std::printf("%s: not found (install libonnx-testdata); skipped\n", root.c_str());
    return 77;
  }
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    bool keep = filters.empty();
    for (const std::string& f : filters) keep |= name.find(f) != std::string::npos;
    if (keep && fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  std::printf(
      "ONNX node conformance: %zu tests in %s, %d at a time, import -> plan_model -> compile_model(host) "
      "-> GraphExecutor (2 threads)\ntolerance: %s\n",
      tests.size(), root.c_str(), jobs, frontend::test::kNodeTestTolerance);

  const auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0, unsupported = 0, unsupported_types = 0;
  std::vector<Child> running;
  size_t next = 0;
  auto record = [&](const std::string& name, const Outcome& o) {
    if (o.verdict == Verdict::kPassed)
      ++passed;
    else if (o.verdict == Verdict::kUnsupported) {
      ++unsupported;
      unsupported_types += o.reason.rfind("unsupported type", 0) == 0;
    } else
      ++failed;
    if (o.verdict == Verdict::kFailed)
      std::printf("FAIL %s: %s\n", name.c_str(), one_line(o.reason, 240).c_str());
    else if (verbose)
      std::printf("%s %s %s\n", o.verdict == Verdict::kPassed ? "PASS" : "UNSUPPORTED", name.c_str(),
                  one_line(o.reason, 160).c_str());
    std::fflush(stdout);
  };
  while (next < tests.size() || !running.empty()) {
    while (next < tests.size() && static_cast<int>(running.size()) < jobs) running.push_back(spawn(tests[next++]));
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);
    for (size_t i = running.size(); i-- > 0;) {
      Child& c = running[i];
      const bool timed_out =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count() > timeout_s;
      // A child writes its result in one go just before it exits: POLLIN or
      // POLLHUP means it is done (or dead).
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !timed_out) continue;
      record(c.name, finish(c, timed_out && !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double rate = passed + failed > 0 ? static_cast<double>(passed) / (passed + failed) : 1.0;
  std::printf("unsupported: %d for operators, %d for value types\n", unsupported - unsupported_types,
              unsupported_types);
  std::printf("pass rate %.1f%% of the supported tests (threshold %.1f%%), %.0f s\n", 100 * rate, 100 * min_rate, secs);
  if (passed < min_passed) std::printf("passed %d tests, fewer than the %d required\n", passed, min_passed);
  std::printf("%d passed, %d failed, %d unsupported\n", passed, failed, unsupported);
  return rate >= min_rate && passed >= min_passed ? 0 : 1;
}
