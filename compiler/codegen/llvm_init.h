// One-time registration of LLVM's x86 and AArch64 back ends.
#pragma once

namespace tessera {

/// Registers the targets, MC layers and asm printers LLVM needs; idempotent
/// and thread-safe (LLVM's registry is process-wide by its own design).
void ensure_llvm_initialized();

}  // namespace tessera
