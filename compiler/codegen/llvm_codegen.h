// LLVM code generation: loop IR -> LLVM IR -> optimized object code.
//
// Each PrimFunc becomes the C symbol `int32_t <name>(void** args)` (the kernel
// ABI of runtime/c_abi.h). Parallel loops are outlined into task bodies and
// launched through tessera_parallel_launch; workspace buffers come from
// tessera_workspace_alloc. Floats use contraction (FMA) but no reassociation.
#pragma once

#include <string>
#include <vector>

#include "base/target.h"
#include "compiler/ir/stmt.h"

namespace tessera {

struct CodegenOptions {
  /// LLVM's whole O3 pipeline (its own vectorizers included) instead of the
  /// short cleanup pipeline that suits explicitly scheduled kernels.
  bool full_pipeline = false;
};

/// The optimized LLVM IR of `funcs` as text (for inspection and tests).
Result<std::string> emit_llvm_ir(const std::vector<PrimFunc>& funcs, const Target& target,
                                 const CodegenOptions& options = {});

/// An ELF object file holding `funcs`, as bytes.
Result<std::string> emit_object(const std::vector<PrimFunc>& funcs, const Target& target,
                                const CodegenOptions& options = {});

/// Assembly text of `funcs` (for looking at the inner loop).
Result<std::string> emit_assembly(const std::vector<PrimFunc>& funcs, const Target& target,
                                  const CodegenOptions& options = {});

}  // namespace tessera
