// Scratch memory for kernels (c_abi.h). Plain aligned malloc: glibc raises its
// mmap threshold after the first large free (up to 32 MiB on 64-bit), so a
// kernel timed in a loop does not pay for fresh pages on every call.
#include <cstdint>
#include <cstdlib>

#include "runtime/c_abi.h"

namespace {
constexpr int64_t kWorkspaceAlignment = 64;
}  // namespace

extern "C" void* tessera_workspace_alloc(int64_t nbytes) {
  if (nbytes < 0 || nbytes > INT64_MAX - kWorkspaceAlignment) return nullptr;
  // Whole cache lines, and at least one, so that 0 bytes still gives a pointer
  // that can be freed and vector code may over-read to the line's end.
  const int64_t rounded = (nbytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment *
                          kWorkspaceAlignment;
  void* ptr = nullptr;
  if (posix_memalign(&ptr, kWorkspaceAlignment,
                     static_cast<size_t>(rounded > 0 ? rounded : kWorkspaceAlignment)) != 0) {
    return nullptr;
  }
  return ptr;
}

extern "C" void tessera_workspace_free(void* ptr) { std::free(ptr); }
