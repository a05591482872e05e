#include "bench/bench_main.h"

#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "compiler/codegen/llvm_target.h"

namespace tessera::bench {
namespace {

// The first "model name" of /proc/cpuinfo (what lscpu prints as "Model
// name"); empty where the kernel gives none (most AArch64 boards).
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// A command's first line of output, or empty when it fails.
std::string first_line_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return "";
  std::array<char, 256> buffer{};
  std::string line = std::fgets(buffer.data(), buffer.size(), pipe.get()) ? buffer.data() : "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// The source tree's commit, "-dirty" when tracked files changed since.
std::string source_commit() {
  const std::string git = "git -C '" TESSERA_SOURCE_DIR "' ";
  std::string commit = first_line_of(git + "rev-parse --short=12 HEAD 2>/dev/null");
  if (commit.empty()) return "unknown";
  if (!first_line_of(git + "status --porcelain --untracked-files=no 2>/dev/null").empty()) commit += "-dirty";
  return commit;
}

}  // namespace

void add_machine_context() {
  const Target host = host_target();
  benchmark::AddCustomContext("cpu_model", cpu_model());
  benchmark::AddCustomContext("llvm_cpu", host.cpu);
  benchmark::AddCustomContext("target", host.short_name());
  benchmark::AddCustomContext("tessera_commit", source_commit());
}

int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tessera::bench
