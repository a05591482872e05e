// Scratch memory for kernels (c_abi.h).
//
// A kernel allocates its scratch buffers (a padded input, a Winograd
// transform) on entry and frees them on exit, with the same sizes call after
// call. Plain malloc gives megabytes of them fresh pages on many calls --
// glibc hands the top of its heap back to the system once it outgrows the
// trim threshold -- and the page faults can cost more than the kernel's
// arithmetic. So each thread keeps the blocks it frees, up to
// kCachedBytesPerThread, and hands them out again to requests they fit.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "runtime/c_abi.h"

namespace {

constexpr int64_t kWorkspaceAlignment = 64;
constexpr size_t kCachedBytesPerThread = size_t{64} << 20;
constexpr size_t kMaxLiveBlocks = 64;  // bounds the bookkeeping of blocks freed by another thread

struct Block {
  void* ptr;
  size_t bytes;
};

class ThreadCache {
 public:
  ThreadCache() = default;
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;
  ~ThreadCache() {
    for (const Block& b : free_) std::free(b.ptr);
  }

  void* allocate(size_t bytes) {
    // The smallest cached block that fits without wasting more than half.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->bytes >= bytes && it->bytes / 2 <= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    Block b{nullptr, bytes};
    if (best != free_.end()) {
      b = *best;
      free_bytes_ -= b.bytes;
      free_.erase(best);
    } else if (posix_memalign(&b.ptr, kWorkspaceAlignment, bytes) != 0) {
      return nullptr;
    }
    if (live_.size() >= kMaxLiveBlocks) live_.erase(live_.begin());
    live_.push_back(b);
    return b.ptr;
  }

  void release(void* ptr) {
    auto it = std::find_if(live_.rbegin(), live_.rend(), [&](const Block& b) { return b.ptr == ptr; });
    if (it == live_.rend()) {  // allocated by another thread (or forgotten): not ours to cache
      std::free(ptr);
      return;
    }
    const Block b = *it;
    live_.erase(std::next(it).base());
    if (b.bytes > kCachedBytesPerThread) {
      std::free(b.ptr);
      return;
    }
    while (!free_.empty() && free_bytes_ + b.bytes > kCachedBytesPerThread) {  // the oldest go first
      std::free(free_.front().ptr);
      free_bytes_ -= free_.front().bytes;
      free_.erase(free_.begin());
    }
    free_.push_back(b);
    free_bytes_ += b.bytes;
  }

 private:
  std::vector<Block> live_, free_;
  size_t free_bytes_ = 0;
};

ThreadCache& thread_cache() {
  thread_local ThreadCache cache;
  return cache;
}

}  // namespace

extern "C" void* tessera_workspace_alloc(int64_t nbytes) {
  if (nbytes < 0 || nbytes > INT64_MAX - kWorkspaceAlignment) return nullptr;
  // Whole cache lines, and at least one, so that 0 bytes still gives a pointer
  // that can be freed and vector code may over-read to the line's end.
  const int64_t rounded = (nbytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  return thread_cache().allocate(static_cast<size_t>(rounded > 0 ? rounded : kWorkspaceAlignment));
}

extern "C" void tessera_workspace_free(void* ptr) {
  if (ptr) thread_cache().release(ptr);
}
