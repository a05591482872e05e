#include "runtime/graph_executor.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>

#include "runtime/elf_check.h"

namespace tessera::runtime {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string describe(DType dtype, const std::vector<int64_t>& shape) {
  return dtype.to_string() + shape_string(shape);
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? "none" : s;
}

// A package whose calls use an external backend's code needs that backend's
// library on the device; say which before the kernel library fails to load.
Status check_external_libraries(const PackageContents& contents) {
  for (const ExternalModule& m : contents.externals) {
    if (m.kind == "graph-payload") continue;  // a module of the backend's own: ExternalModules
    void* handle = dlopen(m.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return Status(ErrorCode::kNotFound, "the package runs regions on the " + m.backend + " backend (" + m.kind +
                                              "), which needs " + m.library + ": install it on this device (" +
                                              (why ? why : "not found") + ")");
    }
    dlclose(handle);
  }
  return Status::ok();
}

// A library built for another architecture would fail in dlopen with "wrong
// ELF class" or "cannot open shared object"; say what happened instead: the
// package's target triple (or the library's machine) and this machine's.
Status check_architecture(const PackageContents& contents) {
  const std::string& lib = contents.library;
  if (lib.size() < 20 ||
      lib.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
      host_elf_machine() == EM_NONE)
    return Status::ok();
  const auto* b = reinterpret_cast<const unsigned char*>(lib.data());
  const uint16_t machine =
      b[EI_DATA] == ELFDATA2MSB ? static_cast<uint16_t>(b[18] << 8 | b[19]) : static_cast<uint16_t>(b[19] << 8 | b[18]);
  if (machine == host_elf_machine()) return Status::ok();
  std::string built_for = elf_machine_name(machine);
  const size_t t = contents.target.find("-mtriple=");
  if (t != std::string::npos) {
    const size_t start = t + 9;
    built_for = contents.target.substr(start, contents.target.find(' ', start) - start);
  }
  struct utsname u;
  const std::string here = uname(&u) == 0 ? u.machine : elf_machine_name(host_elf_machine());
  return Status(ErrorCode::kInvalidArgument, "the package was built for " + built_for + "; this machine is " + here +
                                                 ": compile it for this machine's target, or run it on a " +
                                                 elf_machine_name(machine) + " device");
}

}  // namespace

GraphExecutor::~GraphExecutor() = default;

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::load_file(const std::string& path,
                                                                const ExecutorOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(PackageContents contents, read_package(path));
  auto exec = load(contents, options);
  if (!exec.is_ok()) return exec.status().with_context(path);
  return exec;
}

namespace {
std::atomic<int64_t> executors_loaded{0};
}  // namespace

int64_t GraphExecutor::loaded_in_process() {
  return executors_loaded.load();
}

Result<std::unique_ptr<GraphExecutor>> GraphExecutor::load(const PackageContents& contents,
                                                           const ExecutorOptions& options) {
  TESSERA_RETURN_IF_ERROR(validate_package(contents).with_context("invalid package"));
  if (!contents.calls.empty()) TESSERA_RETURN_IF_ERROR(check_architecture(contents));
  TESSERA_RETURN_IF_ERROR(check_external_libraries(contents));
  executors_loaded.fetch_add(1);
  std::optional<Module> module;
  if (!contents.calls.empty() && !contents.library.empty()) {
    TESSERA_ASSIGN_OR_RETURN(Module m, Module::load_from_bytes(contents.library, options.temp_dir));
    module.emplace(std::move(m));
  }
  auto pool = std::make_unique<ThreadPool>(options.num_threads, options.pool);
  TESSERA_RETURN_IF_ERROR(pool->status().with_context("cannot start the executor's thread pool"));
  std::unique_ptr<GraphExecutor> exec(new GraphExecutor(std::move(module), std::move(pool)));
  TESSERA_RETURN_IF_ERROR(exec->externals_.open(contents));
  TESSERA_ASSIGN_OR_RETURN(exec->plan_, plan_graph_memory(contents));
  TESSERA_RETURN_IF_ERROR(exec->allocate(contents));
  TESSERA_RETURN_IF_ERROR(exec->resolve_calls(contents));
  return exec;
}

// Every value gets its data pointer now, so a run only calls kernels.
Status GraphExecutor::allocate(const PackageContents& contents) {
  TESSERA_ASSIGN_OR_RETURN(arena_, NDArray::create({plan_.arena_bytes}, DType::u8()));
  value_ptrs_.assign(contents.values.size(), nullptr);
  for (size_t id = 0; id < contents.values.size(); ++id) {
    const PackageValue& v = contents.values[id];
    const std::string what = "value " + std::to_string(id) + " ('" + v.name + "')";
    switch (v.kind) {
      case ValueKind::kIntermediate:
        // An intermediate no call names has no storage and no pointer.
        if (plan_.offsets[id] >= 0) {
          value_ptrs_[id] = static_cast<uint8_t*>(arena_.raw_data()) + plan_.offsets[id];
        }
        break;
      case ValueKind::kConstant: {
        auto array = NDArray::create(v.shape, v.dtype);
        if (!array.is_ok()) return array.status().with_context(what);
        std::memcpy(array->raw_data(), v.data.data(), v.data.size());
        value_ptrs_[id] = array->raw_data();
        constants_.push_back(std::move(array).value());
        break;
      }
      case ValueKind::kInput:
      case ValueKind::kOutput: break;  // bound below, in the package's order
    }
  }
  for (auto [list, bindings] : {std::pair{&contents.inputs, &inputs_}, std::pair{&contents.outputs, &outputs_}}) {
    for (int32_t id : *list) {
      const PackageValue& v = contents.values[static_cast<size_t>(id)];
      auto array = NDArray::create(v.shape, v.dtype);
      if (!array.is_ok()) return array.status().with_context("value '" + v.name + "'");
      value_ptrs_[static_cast<size_t>(id)] = array->raw_data();
      bindings->push_back(Binding{v.name, id, std::move(array).value(), false, {}});
    }
  }
  return Status::ok();
}

namespace {

// What call `i` of the package computes, for profiles and traces: its
// symbol, and its metadata with its outputs' shapes when the package has them.
CallDescription describe_call(const PackageContents& contents, size_t i) {
  const KernelCall& call = contents.calls[i];
  CallDescription d{call.kind == CallKind::kKernel ? call.symbol : call_kind_name(call.kind), std::nullopt, {}};
  if (!contents.call_info.empty()) {
    d.info = contents.call_info[i];
    for (size_t a = call.args.size() - d.info->num_outputs; a < call.args.size(); ++a)
      d.output_shapes.push_back(contents.values[static_cast<size_t>(call.args[a])].shape);
  }
  return d;
}

// Call `i` against the argument table its kernel exports (c_abi.h): as
// many arguments, and no buffer smaller than what the kernel reads or
// writes there. A package whose calls do not fit its library (crafted, or
// from another build) is refused here instead of overrunning a buffer.
Status check_call_arguments(const Module& module, const PackageContents& contents, size_t i) {
  const KernelCall& call = contents.calls[i];
  const int64_t* table = module.kernel_arguments(call.symbol);
  if (table == nullptr) return Status::ok();
  const std::string where = "call " + std::to_string(i) + " of the graph: kernel '" + call.symbol + "'";
  if (table[0] != static_cast<int64_t>(call.args.size()))
    return Status(ErrorCode::kParseError, where + " takes " + std::to_string(table[0]) + " arguments, the call gives " +
                                              std::to_string(call.args.size()));
  for (size_t a = 0; a < call.args.size(); ++a) {
    const PackageValue& v = contents.values[static_cast<size_t>(call.args[a])];
    if (v.nbytes() < table[1 + a])
      return Status(ErrorCode::kParseError,
                    where + ": argument " + std::to_string(a) + " spans " + std::to_string(table[1 + a]) +
                        " bytes, its value " +
                        (v.name.empty() ? "#" + std::to_string(call.args[a]) : "'" + v.name + "'") + " " +
                        std::to_string(v.nbytes()));
  }
  return Status::ok();
}

}  // namespace

// Resolves every symbol before the first run, so a package built against a
// different library fails at load, naming the symbol, not halfway through a run.
Status GraphExecutor::resolve_calls(const PackageContents& contents) {
  std::map<std::string, TesseraKernelFn> resolved;
  for (size_t i = 0; i < contents.calls.size(); ++i) {
    const KernelCall& call = contents.calls[i];
    if (call.kind != CallKind::kKernel) {
      Call c;
      c.kind = call.kind;
      c.symbol = call_kind_name(call.kind);
      for (int32_t id : call.args) c.args.push_back(value_ptrs_[static_cast<size_t>(id)]);
      c.target = static_cast<size_t>(call.target);
      if (call.kind == CallKind::kCopy || call.kind == CallKind::kCopySlice) {
        const int64_t part = contents.values[static_cast<size_t>(call.args[0])].nbytes();
        c.nbytes = static_cast<size_t>(part);
        c.slots = part > 0 ? contents.values[static_cast<size_t>(call.args[1])].nbytes() / part : 0;
      }
      calls_.push_back(std::move(c));
      descriptions_.push_back(describe_call(contents, i));
      continue;
    }
    if (const ExternalPayload* payload = externals_.payload_for(call.symbol)) {
      Call c;
      c.symbol = call.symbol;
      std::vector<int64_t> bytes;
      for (int32_t id : call.args) {
        c.args.push_back(value_ptrs_[static_cast<size_t>(id)]);
        bytes.push_back(contents.values[static_cast<size_t>(id)].nbytes());
      }
      auto region = externals_.create(*payload, c.args.data(), bytes);
      if (!region.is_ok()) return region.status().with_context("call " + std::to_string(i) + " of the graph");
      c.external = *region;
      calls_.push_back(std::move(c));
      descriptions_.push_back(describe_call(contents, i));
      continue;
    }
    auto it = resolved.find(call.symbol);
    if (it == resolved.end()) {
      if (!module_)
        return Status(ErrorCode::kNotFound, "call " + std::to_string(i) + " of the graph: kernel '" + call.symbol +
                                                "' needs a library the package lacks");
      auto fn = module_->get_kernel(call.symbol);
      if (!fn.is_ok()) {
        // The module's own message names the unlinked temporary file; say
        // what the user can act on instead.
        return Status(fn.status().code(), "call " + std::to_string(i) + " of the graph: kernel '" + call.symbol +
                                              "' is not in the package's library");
      }
      it = resolved.emplace(call.symbol, fn.value()).first;
    }
    TESSERA_RETURN_IF_ERROR(check_call_arguments(*module_, contents, i));
    Call c;
    c.fn = it->second;
    c.symbol = call.symbol;
    for (int32_t id : call.args) c.args.push_back(value_ptrs_[static_cast<size_t>(id)]);
    calls_.push_back(std::move(c));
    descriptions_.push_back(describe_call(contents, i));
  }
  // Where each input and output is used, for run_with to point elsewhere.
  for (std::vector<Binding>* bindings : {&inputs_, &outputs_})
    for (Binding& b : *bindings)
      for (size_t i = 0; i < contents.calls.size(); ++i)
        for (size_t a = 0; a < contents.calls[i].args.size(); ++a)
          if (contents.calls[i].args[a] == b.value_id) {
            b.uses.emplace_back(i, a);
            b.fixed = b.fixed || (calls_[i].kind == CallKind::kKernel && calls_[i].fn == nullptr);
          }
  return Status::ok();
}

std::vector<std::string> GraphExecutor::input_names() const {
  std::vector<std::string> names;
  for (const Binding& b : inputs_) names.push_back(b.name);
  return names;
}

std::vector<std::string> GraphExecutor::output_names() const {
  std::vector<std::string> names;
  for (const Binding& b : outputs_) names.push_back(b.name);
  return names;
}

std::vector<TensorInfo> GraphExecutor::input_info() const {
  std::vector<TensorInfo> info;
  for (const Binding& b : inputs_) info.push_back({b.name, b.array.dtype(), b.array.shape()});
  return info;
}

std::vector<TensorInfo> GraphExecutor::output_info() const {
  std::vector<TensorInfo> info;
  for (const Binding& b : outputs_) info.push_back({b.name, b.array.dtype(), b.array.shape()});
  return info;
}

Status GraphExecutor::set_input(const std::string& name, const NDArray& array) {
  auto it = std::find_if(inputs_.begin(), inputs_.end(), [&](const Binding& b) { return b.name == name; });
  if (it == inputs_.end()) {
    return Status(ErrorCode::kNotFound,
                  "the model has no input '" + name + "' (its inputs: " + join_names(input_names()) + ")");
  }
  if (array.dtype() != it->array.dtype() || array.shape() != it->array.shape()) {
    return Status(ErrorCode::kInvalidArgument, "input '" + name + "' must be " +
                                                   describe(it->array.dtype(), it->array.shape()) + ", got " +
                                                   describe(array.dtype(), array.shape()));
  }
  TESSERA_RETURN_IF_ERROR(it->array.copy_from(array));
  it->set = true;
  const size_t index = static_cast<size_t>(it - inputs_.begin());
  for (Carried& c : carried_)
    if (c.input == index) c.pending = false;  // the caller's value replaces the carried one
  return Status::ok();
}

Status GraphExecutor::run() {
  for (const Binding& b : inputs_) {
    if (!b.set) {
      return Status(ErrorCode::kInvalidArgument, "input '" + b.name + "' was never set");
    }
  }
  carry_states();
  has_run_ = false;
  TESSERA_RETURN_IF_ERROR(call_kernels());
  has_run_ = true;
  for (Carried& c : carried_) c.pending = true;
  return Status::ok();
}

Status GraphExecutor::carry(const std::string& output, const std::string& input) {
  auto named = [](const std::vector<Binding>& list, const std::string& name) {
    return std::find_if(list.begin(), list.end(), [&](const Binding& b) { return b.name == name; });
  };
  const auto out = named(outputs_, output);
  if (out == outputs_.end())
    return Status(ErrorCode::kNotFound,
                  "the model has no output '" + output + "' (its outputs: " + join_names(output_names()) + ")");
  const auto in = named(inputs_, input);
  if (in == inputs_.end())
    return Status(ErrorCode::kNotFound,
                  "the model has no input '" + input + "' (its inputs: " + join_names(input_names()) + ")");
  if (out->array.dtype() != in->array.dtype() || out->array.shape() != in->array.shape())
    return Status(ErrorCode::kInvalidArgument, "output '" + output + "' is " +
                                                   describe(out->array.dtype(), out->array.shape()) + ", input '" +
                                                   input + "' " + describe(in->array.dtype(), in->array.shape()) +
                                                   ": a carried state must be the same tensor");
  const size_t o = static_cast<size_t>(out - outputs_.begin()), i = static_cast<size_t>(in - inputs_.begin());
  for (const Carried& c : carried_)
    if (c.output == o || c.input == i)
      return Status(ErrorCode::kInvalidArgument, "output '" + outputs_[c.output].name +
                                                     "' is already carried to input '" + inputs_[c.input].name + "'");
  carried_.push_back(Carried{o, i, false});
  return Status::ok();
}

void GraphExecutor::carry_states() {
  for (Carried& c : carried_) {
    if (!c.pending) continue;
    c.pending = false;
    Binding& out = outputs_[c.output];
    Binding& in = inputs_[c.input];
    in.set = true;
    if (out.fixed || in.fixed) {
      std::memcpy(in.array.raw_data(), out.array.raw_data(), static_cast<size_t>(in.array.nbytes()));
      continue;
    }
    // The next run reads the state where this one wrote it, and writes the
    // next state over the one it has consumed.
    std::swap(out.array, in.array);
    point_uses(out, nullptr);
    point_uses(in, nullptr);
    value_ptrs_[static_cast<size_t>(out.value_id)] = out.array.raw_data();
    value_ptrs_[static_cast<size_t>(in.value_id)] = in.array.raw_data();
  }
}

Status GraphExecutor::call_failed(size_t pc, int32_t status) const {
  const Call& call = calls_[pc];
  const std::string what =
      "call " + std::to_string(pc) + " of " + std::to_string(calls_.size()) + " ('" + call.symbol + "')";
  if (call.kind == CallKind::kCopySlice && status == kSliceOutOfRange)
    return Status(ErrorCode::kRuntimeError, what + " writes slot " +
                                                std::to_string(*static_cast<const int64_t*>(call.args[2])) +
                                                " of a value holding " + std::to_string(call.slots));
  return Status(ErrorCode::kRuntimeError, what + " returned status " + std::to_string(status));
}

Status GraphExecutor::call_kernels() {
  ParallelScope scope(pool_.get());
  for (size_t pc = 0; pc < calls_.size();) {
    const size_t at = pc;
    const int32_t status = calls_[pc].invoke(pc);
    if (status != 0) return call_failed(at, status);
  }
  return Status::ok();
}

// run() with a clock read around each call and the pool's timeline on: a
// separate loop, so that run() pays nothing for tracing.
Result<std::vector<CallSpan>> GraphExecutor::run_traced() {
  for (const Binding& b : inputs_)
    if (!b.set) return Status(ErrorCode::kInvalidArgument, "input '" + b.name + "' was never set");
  carry_states();
  has_run_ = false;
  PoolTimeline timeline(pool_->num_threads());
  struct TimelineScope {
    ThreadPool* pool;
    ~TimelineScope() { pool->set_timeline(nullptr); }
  } timeline_scope{pool_.get()};
  pool_->set_timeline(&timeline);
  std::vector<CallSpan> spans;
  spans.reserve(calls_.size());
  std::vector<size_t> recorded(timeline.shares.size(), 0);  // per participant: shares already given to a call
  ParallelScope scope(pool_.get());
  const auto ns = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const int64_t start = ns(std::chrono::steady_clock::now());
  for (size_t pc = 0; pc < calls_.size();) {
    const size_t i = pc;
    const int64_t begin = ns(std::chrono::steady_clock::now());
    const int32_t status = calls_[i].invoke(pc);
    const int64_t end = ns(std::chrono::steady_clock::now());
    if (status != 0) return call_failed(i, status);
    CallSpan span{i, begin - start, end - begin, {}};
    for (size_t p = 0; p < timeline.shares.size(); ++p) {
      for (; recorded[p] < timeline.shares[p].size(); ++recorded[p]) {
        const PoolTimeline::Share& share = timeline.shares[p][recorded[p]];
        span.shares.push_back(
            {static_cast<int>(p), timeline.thread_ids[p], share.start_ns - start, share.end_ns - share.start_ns});
      }
    }
    spans.push_back(std::move(span));
  }
  has_run_ = true;
  for (Carried& c : carried_) c.pending = true;
  return spans;
}

void GraphExecutor::point_uses(Binding& b, void* data) {
  if (!data) data = b.array.raw_data();
  for (auto [call, arg] : b.uses) calls_[call].args[arg] = data;
}

Status GraphExecutor::run_with(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  if (!carried_.empty())
    return Status(ErrorCode::kInvalidArgument,
                  "run_with reads the caller's memory, and this model carries a state from run to run (carry): "
                  "use run");
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size()) {
    return Status(ErrorCode::kInvalidArgument, "run_with needs " + std::to_string(inputs_.size()) + " input and " +
                                                   std::to_string(outputs_.size()) + " output pointers, got " +
                                                   std::to_string(inputs.size()) + " and " +
                                                   std::to_string(outputs.size()));
  }
  const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % NDArray::kAlignment != 0; };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i] && !inputs_[i].set)
      return Status(ErrorCode::kInvalidArgument, "input '" + inputs_[i].name + "' was never set");
    if (misaligned(inputs[i]))
      return Status(ErrorCode::kInvalidArgument, "input '" + inputs_[i].name + "' is not 64-byte aligned");
  }
  bool all_own_outputs = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (misaligned(outputs[i]))
      return Status(ErrorCode::kInvalidArgument, "output '" + outputs_[i].name + "' is not 64-byte aligned");
    all_own_outputs = all_own_outputs && !outputs[i];
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs_[i].fixed) {
      point_uses(inputs_[i], const_cast<void*>(inputs[i]));
    } else if (inputs[i]) {
      std::memcpy(inputs_[i].array.raw_data(), inputs[i], static_cast<size_t>(inputs_[i].array.nbytes()));
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs_[i].fixed) point_uses(outputs_[i], outputs[i]);
  has_run_ = false;
  Status status = call_kernels();
  for (Binding& b : inputs_) point_uses(b, nullptr);
  for (Binding& b : outputs_) point_uses(b, nullptr);
  for (size_t i = 0; i < outputs.size() && status.is_ok(); ++i)
    if (outputs_[i].fixed && outputs[i])
      std::memcpy(outputs[i], outputs_[i].array.raw_data(), static_cast<size_t>(outputs_[i].array.nbytes()));
  has_run_ = status.is_ok() && all_own_outputs;
  return status;
}

Result<NDArray> GraphExecutor::get_output(const std::string& name) const {
  auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const Binding& b) { return b.name == name; });
  if (it == outputs_.end()) {
    return Status(ErrorCode::kNotFound,
                  "the model has no output '" + name + "' (its outputs: " + join_names(output_names()) + ")");
  }
  if (!has_run_) {
    return Status(ErrorCode::kInvalidArgument, "output '" + name + "' is not available: no successful run yet");
  }
  return it->array.copy();
}

Result<std::vector<GraphExecutor::CallProfile>> GraphExecutor::profile(int n_runs) {
  if (n_runs < 1) return Status(ErrorCode::kInvalidArgument, "profile needs n_runs >= 1");
  TESSERA_RETURN_IF_ERROR(run());
  std::vector<std::vector<double>> times(calls_.size());
  ParallelScope scope(pool_.get());
  std::vector<double> run_times(calls_.size());
  for (int r = 0; r < n_runs; ++r) {
    std::fill(run_times.begin(), run_times.end(), 0.0);
    for (size_t pc = 0; pc < calls_.size();) {
      const size_t i = pc;
      const auto start = std::chrono::steady_clock::now();
      const int32_t status = calls_[i].invoke(pc);
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (status != 0) return call_failed(i, status);
      run_times[i] += elapsed.count();  // a call in a loop: all its iterations
    }
    for (size_t i = 0; i < calls_.size(); ++i) times[i].push_back(run_times[i]);
  }
  std::vector<CallProfile> out;
  for (size_t i = 0; i < calls_.size(); ++i) {
    std::vector<double>& t = times[i];
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    out.push_back({calls_[i].symbol, n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])});
  }
  return out;
}

Result<TimingResult> GraphExecutor::benchmark(int n_warmup, int n_runs) {
  if (n_runs < 1 || n_warmup < 0) {
    return Status(ErrorCode::kInvalidArgument, "benchmark needs n_runs >= 1 and n_warmup >= 0, got " +
                                                   std::to_string(n_runs) + " and " + std::to_string(n_warmup));
  }
  for (int i = 0; i < n_warmup; ++i) TESSERA_RETURN_IF_ERROR(run());
  TimingResult result;
  for (int i = 0; i < n_runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    TESSERA_RETURN_IF_ERROR(run());
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    result.costs_s.push_back(elapsed.count());
  }
  std::vector<double> sorted = result.costs_s;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  result.median_s = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  result.min_s = sorted.front();
  for (double c : sorted) result.mean_s += c / static_cast<double>(n);
  return result;
}

}  // namespace tessera::runtime
