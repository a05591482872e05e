// The model package: one file holding everything a device needs to run a
// compiled model — the kernel library, the graph of kernel calls, the values
// table, the parameters and the graph's inputs and outputs. docs/package.md
// gives the format byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tessera::runtime {

/// The eight bytes every package starts with.
inline constexpr char kPackageMagic[8] = {'T', 'S', 'R', 'P', 'K', 'G', '0', '1'};
/// The newest format version this runtime reads. It writes version 1 for a
/// package without external modules (byte for byte as before), 2 for one
/// with them, 3 for one carrying graph payloads, 4 for one storing a
/// float32 constant in half its bytes (every value a float16 or a bfloat16:
/// a half-precision model's weights), widened as it is read, and 5 for one
/// whose calls include control steps (CallKind: a branch or a loop run on
/// the device).
inline constexpr uint32_t kPackageFormatVersion = 5;
/// Header flag: the payload carries per-call metadata (PackageContents::call_info).
/// A flag, not a version, because the section is optional and independent of
/// the version's sections; a runtime that does not know it refuses the
/// package as it refuses a newer version.
inline constexpr uint32_t kPackageFlagCallInfo = 1u << 0;
/// Bytes of the fixed header in front of the payload.
inline constexpr int64_t kPackageHeaderBytes = 32;
/// Most dimensions a value may have.
inline constexpr int kPackageMaxDims = 16;

/// The role of a value in the graph.
enum class ValueKind : uint8_t {
  kInput = 0,         ///< set by the caller before a run (set_input)
  kOutput = 1,        ///< read by the caller after a run (get_output)
  kConstant = 2,      ///< a parameter; its bytes are in the package
  kIntermediate = 3,  ///< produced and consumed inside the graph; lives in the arena
};

/// "input", "output", "constant", "intermediate".
const char* value_kind_name(ValueKind kind);

/// One tensor of the graph. Its id is its index in PackageContents::values.
struct PackageValue {
  std::string name;  ///< unique among inputs and outputs; may be empty otherwise
  ValueKind kind = ValueKind::kIntermediate;
  DType dtype = DType::f32();  ///< scalar, storable (no handles, no vectors)
  std::vector<int64_t> shape;  ///< dense C order; empty for a scalar
  std::string data;            ///< the bytes of a constant (nbytes() long); empty otherwise

  /// Elements times element bytes; -1 when a dimension is negative or the size overflows.
  int64_t nbytes() const;
  bool operator==(const PackageValue&) const = default;
};

/// What a call does. Every call but a kernel is a control step: a model's
/// If and Loop run on the device as steps over the same values table, the
/// executor following `target` where a step jumps (format 5).
enum class CallKind : uint8_t {
  kKernel = 0,      ///< symbol(args)
  kCopy = 1,        ///< args {src, dst}: dst's bytes become src's (the same size)
  kCopySlice = 2,   ///< args {src, dst, index}: slot `index` (an int64 scalar) of dst, which holds
                    ///< whole copies of src, becomes src; an index out of range fails the run
  kJumpUnless = 3,  ///< args {cond}: continue at call `target` when cond (a bool scalar) is false
  kJump = 4,        ///< no args: continue at call `target`
};

/// "kernel", "copy", "copy_slice", "jump_unless", "jump".
const char* call_kind_name(CallKind kind);

/// One call: `symbol(args)`, args[i] the data pointer of value args[i]; or a
/// control step (kind not kKernel, symbol empty).
struct KernelCall {
  std::string symbol;         ///< a C symbol of the library with the kernel ABI (c_abi.h)
  std::vector<int32_t> args;  ///< value ids, in the kernel's parameter order
  CallKind kind = CallKind::kKernel;
  int32_t target = 0;  ///< kJumpUnless, kJump: the call to continue at (calls.size(): the end)
  bool operator==(const KernelCall&) const = default;
};

/// Code of an external backend (bring your own codegen) that the package's
/// calls use. A c-source backend's code is inside the library; what the
/// device needs is the shared library that code calls.
struct ExternalModule {
  std::string backend;  ///< "cblas"
  std::string kind;     ///< "c-source"
  std::string library;  ///< the shared library the device must have, "libopenblas.so.0"
  bool operator==(const ExternalModule&) const = default;
};

/// A region an external backend's runtime module runs (a graph-payload
/// backend): the region serialised by the backend's code generator. A call
/// whose symbol is the payload's goes to the module, not to the library.
struct ExternalPayload {
  std::string backend;  ///< "dnnl": which module runs it (an ExternalModule of kind "graph-payload")
  std::string version;  ///< the payload format's version, checked by the module
  std::string symbol;   ///< the calls that run the region name it
  std::string data;     ///< the serialised region (JSON for dnnl)
  bool operator==(const ExternalPayload&) const = default;
};

/// What one kernel call computes, for profiles, traces and people; the
/// executor never needs it to run.
struct CallInfo {
  std::string name;                ///< its fused group ("fused_conv_add_relu") or external region
  std::vector<std::string> nodes;  ///< the model's (ONNX) node names it computes, in order
  std::string workload_key;        ///< its kernel's task; empty for an external region
  double flops = 0;                ///< floating-point operations of one call; 0: unknown
  uint32_t num_outputs = 1;        ///< the call's last num_outputs arguments are what it writes
  bool operator==(const CallInfo&) const = default;
};

/// Everything in a package, in memory.
struct PackageContents {
  std::string target;                     ///< the target string the library was built for (informational)
  std::string library;                    ///< the shared library's bytes (every kernel)
  std::vector<PackageValue> values;       ///< the values table; id = index
  std::vector<KernelCall> calls;          ///< the graph, in execution order
  std::vector<int32_t> inputs;            ///< ids of the graph inputs, in the caller's order
  std::vector<int32_t> outputs;           ///< ids of the graph outputs, in the caller's order
  std::vector<ExternalModule> externals;  ///< external backends' code the calls use (format 2)
  std::vector<ExternalPayload> payloads;  ///< regions run by graph-payload backends' modules (format 3)
  /// One per call, or empty (a package written before call metadata, or
  /// without it); written with header flag kPackageFlagCallInfo.
  std::vector<CallInfo> call_info;
  bool operator==(const PackageContents&) const = default;
};

/// Checks the invariants a package must hold (docs/package.md, "Validation"):
/// ids in range, sizes consistent, inputs/outputs listed exactly once with
/// unique non-empty names, constants carrying exactly their bytes, call
/// metadata absent or one per call with num_outputs <= the call's arguments.
/// Errors: kParseError naming the value or call at fault.
Status validate_package(const PackageContents& contents);

/// The package's bytes. Errors: whatever validate_package reports.
Result<std::string> write_package_bytes(const PackageContents& contents);

/// Writes the package to `path` (through a temporary file renamed into place,
/// so a failed write never leaves a half package). Errors: validate_package's,
/// kIOError naming the path.
Status write_package(const PackageContents& contents, const std::string& path);

/// Parses and validates package bytes; `source` names them in messages. Never
/// crashes on malformed input. Errors: kParseError (bad magic, truncated,
/// newer format version, checksum mismatch, out-of-range ids, size mismatches).
Result<PackageContents> read_package_bytes(std::string_view bytes, const std::string& source = "<package bytes>");

/// Reads and parses the package at `path`. Errors: kNotFound (no file),
/// kIOError (cannot read), and read_package_bytes's.
Result<PackageContents> read_package(const std::string& path);

/// CRC-32 (IEEE 802.3, the zlib polynomial) of `bytes`; the header stores it of the payload.
uint32_t package_crc32(std::string_view bytes);

}  // namespace tessera::runtime
