// The system C compiler, run as a process: C source in, an ELF object out.
// C-source backends (cblas) compile their regions through here.
#pragma once

#include <string>

#include "base/status.h"
#include "base/target.h"

namespace tessera::external {

/// The C compiler for `target`: "cc" for this machine's architecture,
/// "aarch64-linux-gnu-gcc" for an aarch64 target built elsewhere.
std::string c_compiler_for(const Target& target);

/// Compiles one C translation unit into a position-independent object for
/// `target` (-O2 -fPIC -std=c11) and returns its bytes. `compiler` empty:
/// c_compiler_for(target), found on PATH when it runs. Errors: kNotFound
/// when the compiler is not installed (naming it), kCodegenError with the
/// compiler's messages when it rejects the source.
Result<std::string> compile_c_object(const std::string& source, const Target& target, const std::string& compiler = "");

}  // namespace tessera::external
