// The package and payload loaders against mutated real packages: a model
// compiled with the dnnl backend (payloads) and without it (kernels only),
// whose values, calls, payloads and library are mutated and written with a
// correct checksum (what a crafted package is), then loaded and run in a
// process of its own each (tessera-run). A mutation may load (then it
// runs) or be refused; none may kill the loader with a signal. TESSERA_FUZZ_ITERATIONS sets how
// many mutations a package gets (200 by default; more for a long run).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/llvm_target.h"
#include "compiler/external/dnnl.h"
#include "compiler/model/choose_byoc.h"
#include "compiler/model/compile_model.h"
#include "runtime/graph_executor.h"
#include "tests/compiler/external/dnnl_test_model.h"

namespace tessera::external {
namespace {

using nlohmann::json;
using runtime::PackageContents;

PackageContents compiled(const Backend* backend) {
  model::PlanOptions options;
  options.byoc = backend;
  const model::ModelPlan plan = model::plan_model(graph::test::conv_model(), options).value();
  return model::compile_model(plan, host_target(), {nullptr, 2}).value().package;
}

int iterations() {
  const char* env = std::getenv("TESSERA_FUZZ_ITERATIONS");
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kDefault = 50;  // each run instrumented takes ten times as long
#else
  constexpr int kDefault = 200;
#endif
  return env ? std::max(1, std::atoi(env)) : kDefault;
}

// This process's environment, with the sanitizers (in an instrumented
// build) told to abort on their first report: a memory error in the loader
// is then a signal, not an exit status like a refusal's.
std::vector<std::string> loader_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) != 0 && std::strncmp(*e, "UBSAN_OPTIONS=", 14) != 0) env.emplace_back(*e);
  env.emplace_back("ASAN_OPTIONS=abort_on_error=1:detect_leaks=0:use_sigaltstack=0");
  env.emplace_back("UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1");
  return env;
}

// A random number in a JSON payload changed: to a neighbour, zero, a
// negative, a large value or another id; or a key removed.
void mutate_json(json& j, std::mt19937_64& rng) {
  std::vector<json*> leaves;
  std::vector<std::pair<json*, std::string>> keys;
  std::vector<json*> stack = {&j};
  while (!stack.empty()) {
    json* node = stack.back();
    stack.pop_back();
    if (node->is_number()) leaves.push_back(node);
    if (node->is_object())
      for (auto& [k, v] : node->items()) keys.emplace_back(node, k), stack.push_back(&v);
    if (node->is_array())
      for (json& v : *node) stack.push_back(&v);
  }
  if (!keys.empty() && rng() % 8 == 0) {
    auto& [object, key] = keys[rng() % keys.size()];
    object->erase(key);
    return;
  }
  if (leaves.empty()) return;
  json& leaf = *leaves[rng() % leaves.size()];
  const int64_t v = leaf.is_number_integer() ? leaf.get<int64_t>() : 1;
  const int64_t choices[] = {v + 1, v - 1, 0, -v, v * 2 + 1, int64_t{1} << 40, static_cast<int64_t>(rng() % 64)};
  leaf = choices[rng() % 7];
}

// One structural mutation of `c`; says which.
std::string mutate(PackageContents& c, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % std::max<size_t>(n, 1)); };
  switch (rng() % 6) {
    case 0: {  // a value's dimension
      runtime::PackageValue& v = c.values[pick(c.values.size())];
      if (v.kind == runtime::ValueKind::kConstant || v.shape.empty()) return "nothing";
      int64_t& d = v.shape[pick(v.shape.size())];
      d = rng() % 2 ? d / 2 : d + 1 + static_cast<int64_t>(rng() % 3);
      return "a dimension of value '" + v.name + "'";
    }
    case 1: {  // a call's arguments
      runtime::KernelCall& call = c.calls[pick(c.calls.size())];
      if (call.args.empty()) return "nothing";
      if (rng() % 2) {
        call.args.pop_back();
        return "an argument of " + call.symbol + " dropped";
      }
      call.args[pick(call.args.size())] = static_cast<int32_t>(pick(c.values.size()));
      return "an argument of " + call.symbol + " replaced";
    }
    case 2:
    case 3: {  // a payload's field
      if (c.payloads.empty()) return "nothing";
      runtime::ExternalPayload& p = c.payloads[pick(c.payloads.size())];
      json j = json::parse(p.data);
      mutate_json(j, rng);
      p.data = j.dump();
      return "payload " + p.symbol + ": " + p.data.substr(0, 120);
    }
    case 4: {  // the library cut short
      c.library.resize(pick(c.library.size()));
      return "the library cut to " + std::to_string(c.library.size()) + " bytes";
    }
    default: {  // a call repeated with another's arguments
      if (c.calls.size() < 2) return "nothing";
      c.calls[pick(c.calls.size())].args = c.calls[pick(c.calls.size())].args;
      return "a call's arguments swapped for another's";
    }
  }
}

// Loads and runs `c` as a device would (tessera-run, a process of its own:
// this one may hold oneDNN's threads, which a fork would not carry); the
// signal that killed it (a run over a minute is killed: a hang fails too,
// SIGKILL), else its exit status in `*exit_code`, or 0.
int signal_of_loading(const PackageContents& c, int* exit_code = nullptr) {
  const std::string path = ::testing::TempDir() + "/fuzz_" + std::to_string(::getpid()) + ".tsr";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << runtime::write_package_bytes(c).value();
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> words = {TESSERA_RUN_BINARY, path, "--random-inputs", "1",
                                    "--threads",        "1",  "--warmup",        "0"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_words = loader_environment();
  std::vector<char*> env;
  for (std::string& e : env_words) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, TESSERA_RUN_BINARY, &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(spawned, 0) << TESSERA_RUN_BINARY;
  int status = 0;
  for (int waited_ms = 0; spawned == 0 && ::waitpid(pid, &status, WNOHANG) == 0; waited_ms += 5) {
    if (waited_ms > 60000) ::kill(pid, SIGKILL);
    ::usleep(5000);
  }
  std::remove(path.c_str());
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return spawned == 0 && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

void fuzz(const PackageContents& original, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int ran = 0, refused_at_load = 0, refused = 0;
  for (int i = 0; i < iterations(); ++i) {
    PackageContents c = original;
    const std::string what = mutate(c, rng);
    // What write_package refuses never reaches a loader: a reader validates
    // the same invariants.
    if (!runtime::validate_package(c).is_ok()) {
      ++refused;
      continue;
    }
    int exit_code = 0;
    const int signal = signal_of_loading(c, &exit_code);
    ASSERT_EQ(signal, 0) << "mutation " << i << " (" << what << ") killed the loader with signal " << signal;
    ++(exit_code == 0 ? ran : refused_at_load);
  }
  std::printf("%d mutations: %d ran, %d refused at load, %d refused by validation\n", iterations(), ran,
              refused_at_load, refused);
  // Both ways were taken: the mutations reach the loaders' checks.
  EXPECT_GT(ran, 0);
  EXPECT_GT(refused_at_load, 0);
}

TEST(LoaderFuzz, MutatedPackagesWithPayloadsNeverCrashTheLoader) {
  const std::unique_ptr<Backend> dnnl = make_dnnl_backend();
  if (model::auto_backend_name(host_target()) != "dnnl") GTEST_SKIP() << "libtessera_dnnl.so is not built";
  const PackageContents package = compiled(dnnl.get());
  ASSERT_FALSE(package.payloads.empty());
  ASSERT_EQ(signal_of_loading(package), 0) << "the package itself";
  fuzz(package, 1);
}

TEST(LoaderFuzz, MutatedPackagesOfKernelsNeverCrashTheLoader) {
  fuzz(compiled(nullptr), 2);
}

}  // namespace
}  // namespace tessera::external
