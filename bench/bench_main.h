// The main of every bench_* program: Google Benchmark's, with the machine
// the figures come from in the output's context.
//
// `--benchmark_out=F --benchmark_out_format=json` then writes, besides
// Google Benchmark's own context (date, host, cores, caches), `cpu_model`
// (the kernel's name for the CPU, as lscpu prints it), `llvm_cpu` (LLVM's
// name for it, the key results are filed under), `target` (what Tessera
// compiles for here) and `tessera_commit` (the source tree's commit, with
// "-dirty" when it has uncommitted changes). scripts/record_bench.py files
// such a run under bench/results/ and scripts/render_benchmarks.py renders
// BENCHMARKS.md's table from them.
#pragma once

namespace tessera::bench {

/// Adds the machine's context (above) to Google Benchmark's output.
void add_machine_context();

/// Initialize, the machine's context, the benchmarks `argv` selects, Shutdown;
/// 1 on an argument Google Benchmark does not know.
int run_benchmarks(int argc, char** argv);

}  // namespace tessera::bench

#define TESSERA_BENCHMARK_MAIN()                         \
  int main(int argc, char** argv) {                      \
    return ::tessera::bench::run_benchmarks(argc, argv); \
  }
