// The graph executor: runs a compiled model from its package on the device.
//
//   auto exec = GraphExecutor::load_file("model.tsr", {}).value();
//   exec->set_input("x", x);   // shape and dtype checked
//   exec->run();               // kernels in order, on the executor's thread pool
//   NDArray y = exec->get_output("y").value();
#pragma once

#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/external_modules.h"
#include "runtime/memory_plan.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/package.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"

namespace tessera::runtime {

/// How a GraphExecutor runs.
struct ExecutorOptions {
  /// Participants of the executor's thread pool (the caller included); <= 0:
  /// one per CPU this process may run on.
  int num_threads = 0;
  /// Placement of the pool's workers.
  PoolOptions pool;
  /// Where the library's bytes are written (and at once unlinked) to be dlopened.
  std::string temp_dir = "/tmp";
};

/// Name, element type and shape of a graph input or output.
struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

/// What the package says about one kernel call, for profiles and traces.
struct CallDescription {
  std::string symbol;
  /// The package's metadata of the call; none for a package without it
  /// (written before call metadata existed).
  std::optional<CallInfo> info;
  /// Shapes of the values the call writes; empty without metadata.
  std::vector<std::vector<int64_t>> output_shapes;
};

/// One participant's share of a parallel loop a traced call launched on the
/// pool: the thread it ran on and when (as CallSpan's times).
struct ShareSpan {
  int participant = 0;  ///< 0: the executor's thread (inside its call's span); others: pool workers
  int64_t thread_id = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

/// One call of a traced run: when it started (nanoseconds from the run's
/// start, monotonic clock) and how long it took, on the executor's thread,
/// and the shares of the parallel loops it ran on the pool.
struct CallSpan {
  size_t call = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  std::vector<ShareSpan> shares;
};

/// A loaded model: its library open with every kernel resolved, constants and
/// outputs allocated, intermediates planned into one arena. Not thread-safe:
/// one run at a time. Output arrays are overwritten by each run.
class GraphExecutor {
 public:
  /// Validates `contents`, opens its library, resolves every call's symbol and
  /// allocates all buffers. Errors: validate_package's (kParseError),
  /// kInvalidArgument (the library is for another architecture: "built for
  /// aarch64-linux-gnu; this machine is x86_64"), kNotFound
  /// (a symbol the library lacks, naming it and its first call; a backend's
  /// runtime module missing, naming the backend and the library), kIOError
  /// (the library does not load, memory is exhausted), kParseError (a payload
  /// its module cannot build), ThreadPool::status()'s.
  static Result<std::unique_ptr<GraphExecutor>> load(const PackageContents& contents,
                                                     const ExecutorOptions& options = {});
  /// read_package(path), then load.
  static Result<std::unique_ptr<GraphExecutor>> load_file(const std::string& path, const ExecutorOptions& options = {});
  /// How many executors this process has loaded (load's calls that got as
  /// far as the package's library): what shows that a command ran nothing
  /// here (`tessera compile` times nothing; `tune` times on its workers).
  static int64_t loaded_in_process();

  /// Copies `array` into the input `name`. Errors: kNotFound (no such input;
  /// the message lists the inputs), kInvalidArgument (dtype or shape differs;
  /// the message gives both).
  Status set_input(const std::string& name, const NDArray& array);

  /// Calls every kernel in order with the executor's pool installed,
  /// following the package's control steps (jumps of an If or a Loop).
  /// Errors: kInvalidArgument (an input was never set), kRuntimeError (a kernel
  /// returned non-zero; the message names the call index, symbol and status).
  Status run();

  /// Runs once on the caller's memory, without copies: input i is read from
  /// `inputs[i]` and output i written to `outputs[i]` (the package's order)
  /// instead of the executor's own buffers; a null entry keeps the executor's
  /// buffer (an input must then have been set). Each pointer must be 64-byte
  /// aligned (what the kernels assume) and hold the tensor's bytes; none is
  /// kept after the call. get_output then has the outputs left null only.
  /// An input or output an external backend's region uses is copied instead
  /// (into the executor's buffer before, out of it after): a region's
  /// pointers are fixed when it is created.
  /// Errors: kInvalidArgument (wrong counts, a misaligned pointer, an input
  /// never set), run()'s.
  Status run_with(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

  /// Carries a state from run to run (a streaming model's): the output
  /// `output` of each successful run() is the input `input` of the next.
  /// Their buffers trade places as the next run starts, so the state is
  /// never copied, by the caller or here (one that an external region uses
  /// is copied instead: its pointers are fixed), and get_output still gives
  /// the last run's output. Until the first run the input is set as usual;
  /// set_input between runs replaces the carried state. run_with, which
  /// reads the caller's memory, refuses a model with a carried state.
  /// Errors: kNotFound (no such output or input), kInvalidArgument (their
  /// dtypes or shapes differ, or either is already carried).
  Status carry(const std::string& output, const std::string& input);

  /// A copy of the output `name` as of the last run. Errors: kNotFound (no such
  /// output), kInvalidArgument (no successful run yet), kIOError (out of memory).
  Result<NDArray> get_output(const std::string& name) const;

  /// Times whole runs: `n_warmup` untimed, then `n_runs` timed on the monotonic
  /// clock. Errors: kInvalidArgument (n_runs < 1 or n_warmup < 0), run()'s.
  Result<TimingResult> benchmark(int n_warmup, int n_runs);

  /// Median seconds of each kernel call over `n_runs` runs (after one
  /// untimed run), in call order, with the call's symbol: where a run's time
  /// goes. A call inside a loop counts all its iterations of a run. Errors: kInvalidArgument (n_runs < 1), run()'s.
  struct CallProfile {
    std::string symbol;
    double median_s = 0;
  };
  Result<std::vector<CallProfile>> profile(int n_runs);

  /// One run like run(), timing each call on the calling thread and each
  /// share of its parallel loops on the pool's threads (PoolTimeline): a span
  /// per call, in call order. run() itself reads no clock. Errors: run()'s.
  Result<std::vector<CallSpan>> run_traced();

  /// Each call's description, in call order.
  const std::vector<CallDescription>& call_descriptions() const { return descriptions_; }

  /// Names of the graph inputs and outputs, in the package's order.
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  /// Name, dtype and shape of each graph input (output), in the package's
  /// order: what `tessera run` needs to check or make up inputs.
  std::vector<TensorInfo> input_info() const;
  std::vector<TensorInfo> output_info() const;
  /// Bytes of the intermediate arena (the planned peak).
  int64_t peak_memory_bytes() const { return plan_.arena_bytes; }
  /// Sum of the sizes of all intermediates (what they would take without reuse).
  int64_t intermediate_bytes_total() const { return plan_.total_bytes; }
  /// Participants of the executor's thread pool.
  int num_threads() const { return pool_->num_threads(); }

  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;
  ~GraphExecutor();

 private:
  // A status of Call::invoke that no kernel returns: a kCopySlice's index
  // was outside its destination.
  static constexpr int32_t kSliceOutOfRange = INT32_MIN;
  struct Call {
    CallKind kind = CallKind::kKernel;
    TesseraKernelFn fn = nullptr;
    std::string symbol;           // the kernel's; a control step's kind name
    std::vector<void*> args;      // data pointers, fixed at load time
    ExternalRegionCall external;  // a region a backend's module runs (a kernel whose fn is null)
    size_t target = 0;            // where a jump continues
    size_t nbytes = 0;            // kCopy: the bytes copied; kCopySlice: one slice's
    int64_t slots = 0;            // kCopySlice: the slices the destination holds
    // Runs the call and moves `pc` to the next one; a kernel's status (0: success).
    int32_t invoke(size_t& pc) {
      switch (kind) {
        case CallKind::kKernel: ++pc; return fn ? fn(args.data()) : external.run(external.region, args.data());
        case CallKind::kCopy:
          if (nbytes != 0 && args[0] != args[1]) std::memcpy(args[1], args[0], nbytes);  // empty: no buffers
          ++pc;
          return 0;
        case CallKind::kCopySlice: {
          const int64_t slot = *static_cast<const int64_t*>(args[2]);
          if (slot < 0 || slot >= slots) return kSliceOutOfRange;
          std::memcpy(static_cast<char*>(args[1]) + static_cast<size_t>(slot) * nbytes, args[0], nbytes);
          ++pc;
          return 0;
        }
        case CallKind::kJumpUnless: pc = *static_cast<const uint8_t*>(args[0]) ? pc + 1 : target; return 0;
        case CallKind::kJump: pc = target; return 0;
      }
      return 0;
    }
  };
  struct Binding {
    std::string name;
    int32_t value_id = 0;
    NDArray array;
    bool set = false;                             // inputs only: set_input was called
    std::vector<std::pair<size_t, size_t>> uses;  // (call, argument) positions of the value
    // An external region reads or writes it: its pointers are fixed when the
    // region is created (runtime/external_abi.h), so run_with copies it
    // instead of pointing its uses elsewhere.
    bool fixed = false;
  };

  GraphExecutor(std::optional<Module> module, std::unique_ptr<ThreadPool> pool)
      : module_(std::move(module)), pool_(std::move(pool)) {}
  Status allocate(const PackageContents& contents);
  Status resolve_calls(const PackageContents& contents);
  Status call_kernels();
  // The error of call `pc` having returned `status`.
  Status call_failed(size_t pc, int32_t status) const;
  // As a run starts: each carried output of the last run becomes its input
  // (carry()), unless set_input replaced it since.
  void carry_states();
  // Points every use of `b` at `data` (its own buffer's when null).
  void point_uses(Binding& b, void* data);

  std::optional<Module> module_;  // none for a graph without calls
  ExternalModules externals_;     // modules of graph-payload backends, and their regions
  std::unique_ptr<ThreadPool> pool_;
  MemoryPlan plan_;
  NDArray arena_;  // uint8, plan_.arena_bytes long
  std::vector<NDArray> constants_;
  std::vector<Binding> inputs_;
  std::vector<Binding> outputs_;
  std::vector<void*> value_ptrs_;  // data pointer of every value id
  std::vector<Call> calls_;
  struct Carried {
    size_t output = 0, input = 0;  // indices into outputs_, inputs_
    bool pending = false;          // the last run's output is still to become the input
  };
  std::vector<Carried> carried_;
  std::vector<CallDescription> descriptions_;
  bool has_run_ = false;
};

}  // namespace tessera::runtime
