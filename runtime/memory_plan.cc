#include "runtime/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tessera::runtime {
namespace {

int64_t aligned_size(int64_t nbytes) {
  const int64_t n = std::max<int64_t>(nbytes, 1);
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool intersect(const LiveInterval& a, const LiveInterval& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_intervals(const std::vector<LiveInterval>& buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), -1);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Large buffers first: they are the hardest to fit into gaps, and small
  // ones then fill what the large ones leave (TFLite's "greedy by size").
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].nbytes != buffers[b].nbytes) return buffers[a].nbytes > buffers[b].nbytes;
    return buffers[a].first < buffers[b].first;
  });

  std::vector<size_t> placed;
  struct Range {
    int64_t begin, end;
  };
  std::vector<Range> busy;
  for (size_t index : order) {
    const LiveInterval& buffer = buffers[index];
    const int64_t size = aligned_size(buffer.nbytes);
    busy.clear();
    for (size_t other : placed) {
      if (intersect(buffer, buffers[other])) {
        busy.push_back({plan.offsets[other], plan.offsets[other] + aligned_size(buffers[other].nbytes)});
      }
    }
    std::sort(busy.begin(), busy.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    // Walk the gaps between the conflicting ranges (which may overlap each
    // other: they need not be live at the same time) and keep the tightest fit.
    int64_t best_offset = -1, best_gap = std::numeric_limits<int64_t>::max();
    int64_t cursor = 0;
    for (const Range& r : busy) {
      const int64_t gap = r.begin - cursor;
      if (gap >= size && gap < best_gap) {
        best_gap = gap;
        best_offset = cursor;
      }
      cursor = std::max(cursor, r.end);
    }
    if (best_offset < 0) best_offset = cursor;  // above every conflicting buffer
    plan.offsets[index] = best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, best_offset + size);
    plan.total_bytes += buffer.nbytes;
    placed.push_back(index);
  }
  return plan;
}

Result<MemoryPlan> plan_graph_memory(const PackageContents& contents) {
  const size_t n = contents.values.size();
  std::vector<int32_t> first(n, -1), last(n, -1);
  for (size_t i = 0; i < contents.calls.size(); ++i) {
    for (int32_t id : contents.calls[i].args) {
      if (id < 0 || static_cast<size_t>(id) >= n) {
        return Status(ErrorCode::kInvalidArgument,
                      "call " + std::to_string(i) + " names value " + std::to_string(id) + ", out of range");
      }
      if (first[id] < 0) first[id] = static_cast<int32_t>(i);
      last[id] = static_cast<int32_t>(i);
    }
  }
  // A loop runs its calls again: a value that lives at any point of a loop
  // (a jump back from call j to call t <= j) lives through all of it, since
  // the next iteration may read it again or write over it. Loops nest, so
  // this widens until nothing changes.
  for (bool widened = true; widened;) {
    widened = false;
    for (size_t j = 0; j < contents.calls.size(); ++j) {
      const KernelCall& call = contents.calls[j];
      const bool jumps = call.kind == CallKind::kJump || call.kind == CallKind::kJumpUnless;
      if (!jumps || static_cast<size_t>(call.target) > j) continue;
      const int32_t t = call.target, end = static_cast<int32_t>(j);
      for (size_t id = 0; id < n; ++id) {
        if (first[id] < 0 || last[id] < t || first[id] > end) continue;
        if (first[id] > t || last[id] < end) widened = true;
        first[id] = std::min(first[id], t);
        last[id] = std::max(last[id], end);
      }
    }
  }
  std::vector<LiveInterval> intervals;
  std::vector<size_t> ids;
  for (size_t id = 0; id < n; ++id) {
    const PackageValue& v = contents.values[id];
    if (v.kind != ValueKind::kIntermediate || first[id] < 0) continue;
    const int64_t nbytes = v.nbytes();
    if (nbytes < 0 || nbytes > (int64_t{1} << 56)) {
      return Status(ErrorCode::kInvalidArgument, "value " + std::to_string(id) + " has an invalid size");
    }
    intervals.push_back({nbytes, first[id], last[id]});
    ids.push_back(id);
  }
  MemoryPlan placed = plan_intervals(intervals);
  MemoryPlan plan;
  plan.offsets.assign(n, -1);
  for (size_t i = 0; i < ids.size(); ++i) plan.offsets[ids[i]] = placed.offsets[i];
  plan.arena_bytes = placed.arena_bytes;
  plan.total_bytes = placed.total_bytes;
  return plan;
}

}  // namespace tessera::runtime
