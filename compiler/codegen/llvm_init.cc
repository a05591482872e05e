#include "compiler/codegen/llvm_init.h"

#include <llvm/Support/TargetSelect.h>

#include <mutex>

namespace tessera {

void ensure_llvm_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
  });
}

}  // namespace tessera
