// tessera.compile's engine: what `tessera compile` does (tools/cmd_compile.cc),
// through the same library calls: import, plan from the records, compile,
// write the package.
#pragma once

#include <string>
#include <vector>

namespace tessera::python {

/// How tessera.compile was called (its Python wrapper fills in defaults).
struct CompileArgs {
  std::string model;                      ///< an .onnx file
  std::string output;                     ///< the package to write
  std::vector<std::string> input_shapes;  ///< "name:d0,d1,..." bindings
  std::vector<std::string> input_values;  ///< "name=value" bindings of scalar inputs
  std::string db = "tessera.db";          ///< read only; a missing file: fallbacks only
  bool use_records = true;                ///< false: every kernel from its fallback
  std::string target;                     ///< empty: this machine
  std::string byoc = "auto";              ///< external backend: none, cblas, dnnl, auto (docs/byoc.md)
  int jobs = 0;                           ///< code generation threads; 0: one per CPU
  bool verbose = false;                   ///< print what `tessera compile` prints
  std::string precision = "fp32";         ///< fp32 or bf16 (--precision)
};

/// Compiles, without the GIL, and writes `args.output`. ValueError: a
/// target or backend that does not parse; StatusError: the model's, the
/// database's and the compiler's errors, with `tessera compile`'s messages.
void compile(const CompileArgs& args);

}  // namespace tessera::python
