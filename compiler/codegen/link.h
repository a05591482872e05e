// Linking object code into a shared library with LLVM's lld.
#pragma once

#include <string>
#include <vector>

#include "base/target.h"

namespace tessera {

/// Links ELF objects (bytes) into a shared library for `target` and returns
/// its bytes. Runtime symbols (tessera_parallel_launch, libm) stay undefined
/// and resolve when the library is loaded. `libraries` (as `-l` names,
/// "openblas") are shared libraries the objects need, searched in the
/// target's multiarch directories (/usr/lib/<triple>, /usr/lib) and recorded
/// as needed by the library. Errors: kCodegenError with lld's messages (a
/// library that is not installed for the target among them).
Result<std::string> link_shared_library(const std::vector<std::string>& objects, const Target& target,
                                        const std::vector<std::string>& libraries = {});

/// Path of the lld ELF linker, or an error saying it is missing.
Result<std::string> find_lld();

}  // namespace tessera
