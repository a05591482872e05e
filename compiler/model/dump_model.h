// What `tessera compile --dump` writes: each kernel of a compiled model as
// Tessera's lowered IR, LLVM IR or assembly, one file per kernel.
#pragma once

#include <string>

#include "base/status.h"
#include "base/target.h"
#include "compiler/model/compile_model.h"

namespace tessera::model {

/// The form of a kernel dump.
enum class DumpKind : uint8_t {
  kIr,        ///< Tessera's lowered loop IR as its printer prints it (SYMBOL.ir)
  kLlvmIr,    ///< LLVM IR after the optimization pipeline the build runs (SYMBOL.ll)
  kAssembly,  ///< assembly for the target (SYMBOL.s)
};

/// "ir", "ll", "asm".
const char* dump_kind_name(DumpKind kind);

/// Writes one file per kernel of `model` into `dir` (created if missing),
/// named by the kernel's symbol, plus `index.tsv`: a header line, then one
/// line per kernel: symbol, file, workload key, label, and the model nodes of
/// each of its calls ("; " between a call's nodes, " | " between calls).
/// Errors: kIOError naming the path that cannot be created or written; code
/// generation errors naming the kernel.
Status dump_kernels(const CompiledModel& model, const Target& target, DumpKind kind, const std::string& dir);

}  // namespace tessera::model
