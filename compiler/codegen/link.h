// Linking object code into a shared library with LLVM's lld.
#pragma once

#include <string>
#include <vector>

#include "base/target.h"

namespace tessera {

/// Links ELF objects (bytes) into a shared library for `target` and returns
/// its bytes. Runtime symbols (tessera_parallel_launch, libm) stay undefined
/// and resolve when the library is loaded.
Result<std::string> link_shared_library(const std::vector<std::string>& objects, const Target& target);

/// Path of the lld ELF linker, or an error saying it is missing.
Result<std::string> find_lld();

}  // namespace tessera
