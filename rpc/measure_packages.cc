#include "rpc/measure_packages.h"

#include <memory>
#include <vector>

#include "rpc/wire.h"
#include "runtime/package_timing.h"

namespace tessera::rpc {

namespace {

// The loaded packages warmed where they need it, the sandbox locked down,
// then the packages timed against each other.
pb::Result time_packages(const pb::Job& job, const SandboxOptions& options,
                         const std::vector<runtime::PackageContents>& contents,
                         const std::vector<std::unique_ptr<runtime::GraphExecutor>>& loaded,
                         const std::function<Status()>& lock_down) {
  auto fail = [&](pb::ErrorKind kind, const std::string& message) {
    return error_result(job, kind, message, options.worker_id);
  };
  const pb::PackageTiming& spec = job.package_timing();
  std::vector<runtime::GraphExecutor*> executors;
  for (size_t p = 0; p < loaded.size(); ++p) {
    // A backend's module starts threads and generates code at its first
    // run, which the lock-down below forbids: a package with backend code
    // runs once before it. Tessera's kernels start nothing, and never run
    // before it.
    runtime::GraphExecutor* e = loaded[p].get();
    if (!contents[p].externals.empty() || !contents[p].payloads.empty()) {
      Status warm = e->run();
      if (!warm.is_ok()) return fail(pb::RUNTIME_ERROR, warm.message());
    }
    executors.push_back(e);
  }
  Status locked = lock_down();
  if (!locked.is_ok()) return fail(pb::SANDBOX_ERROR, "the sandbox could not be set up: " + locked.message());
  pb::Result result = fail(pb::OK, "");
  result.set_threads(static_cast<uint32_t>(options.threads));
  pb::PackageTimes* times = result.mutable_package_times();
  if (spec.whole_runs()) {
    auto whole = runtime::time_alternately(executors, {.rounds = spec.rounds(), .round_s = spec.round_seconds()});
    if (!whole.is_ok()) return fail(pb::RUNTIME_ERROR, whole.status().message());
    for (size_t p = 0; p < executors.size(); ++p) {
      times->add_median_s(whole->median_s[p]);
      times->add_ratio_to_first(whole->ratio_to_first[p]);
      times->add_rounds_slower(whole->rounds_slower[p]);
    }
    times->set_rounds(whole->rounds);
  } else {
    auto calls = runtime::profile_alternately(executors, spec.runs());
    if (!calls.is_ok()) return fail(pb::RUNTIME_ERROR, calls.status().message());
    for (const std::vector<double>& package : *calls) {
      pb::CallSeconds* c = times->add_calls();
      for (double s : package) c->add_seconds(s);
    }
  }
  return result;
}

}  // namespace

pb::Result measure_packages(const pb::Job& job, const SandboxOptions& options,
                            const std::function<Status()>& lock_down) {
  const pb::PackageTiming& spec = job.package_timing();
  std::vector<runtime::PackageContents> contents;
  for (int i = 0; i < spec.packages_size(); ++i) {
    auto package = runtime::read_package_bytes(spec.packages(i), "package " + std::to_string(i));
    if (!package.is_ok()) return error_result(job, pb::LOAD_ERROR, package.status().message(), options.worker_id);
    contents.push_back(std::move(package).value());
  }
  std::vector<const runtime::PackageContents*> pointers;
  for (const runtime::PackageContents& c : contents) pointers.push_back(&c);
  runtime::ExecutorOptions executor;
  executor.num_threads = options.threads;
  executor.pool.pin_threads = !options.pin_cpus.empty();
  executor.pool.cpus = options.pin_cpus;
  executor.temp_dir = options.temp_dir;
  auto loaded = runtime::load_with_random_inputs(pointers, executor, job.input_seed());
  if (!loaded.is_ok()) return error_result(job, pb::LOAD_ERROR, loaded.status().message(), options.worker_id);
  pb::Result result = time_packages(job, options, contents, *loaded, lock_down);
  // The child exits right after its report, and the packages stay loaded
  // until then: threads a package's library started (a backend's team, its
  // constructors' own) may still be on their way into its code, which
  // unloading it would unmap under them.
  for (std::unique_ptr<runtime::GraphExecutor>& e : *loaded) (void)e.release();
  return result;
}

}  // namespace tessera::rpc
