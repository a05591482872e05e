#include "compiler/schedule/layout.h"

#include <cstring>

#include "compiler/schedule/state.h"

namespace tessera {
namespace {

// Logical element (o, a, i, t) -- o over the dims before the axis, a along
// it, i over the dims after it but the last layout.inner, t over those --
// against its packed position; `to_packed` copies one way or the other.
void copy_packed(const void* src, void* dst, const std::vector<int64_t>& shape, int64_t element_bytes,
                 const PackedLayout& layout, bool to_packed) {
  int64_t outer = 1, inner = 1, trailing = 1;
  const size_t first_trailing = shape.size() - static_cast<size_t>(layout.inner);
  for (int d = 0; d < layout.axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(layout.axis) + 1; d < first_trailing; ++d) inner *= shape[d];
  for (size_t d = first_trailing; d < shape.size(); ++d) trailing *= shape[d];
  const int64_t extent = shape[static_cast<size_t>(layout.axis)], f = layout.factor;
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  const auto bytes = static_cast<size_t>(element_bytes);
  // A factor that does not divide the axis pads its last block with zeros.
  if (to_packed && extent % f != 0) {
    int64_t total = (extent + f - 1) / f * f * outer * inner * trailing;
    std::memset(out, 0, static_cast<size_t>(total) * bytes);
  }
  const auto run = static_cast<size_t>(trailing) * bytes;  // the trailing dims, contiguous in both
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < extent; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t logical = ((o * extent + a) * inner + i) * trailing;
        const int64_t packed = ((((a / f) * outer + o) * inner + i) * f + a % f) * trailing;
        const int64_t from = to_packed ? logical : packed, to = to_packed ? packed : logical;
        std::memcpy(out + static_cast<size_t>(to) * bytes, in + static_cast<size_t>(from) * bytes, run);
      }
}

}  // namespace

std::vector<int64_t> packed_shape(const std::vector<int64_t>& shape, const PackedLayout& layout) {
  std::vector<int64_t> out = {(shape[static_cast<size_t>(layout.axis)] + layout.factor - 1) / layout.factor};
  const size_t first_trailing = shape.size() - static_cast<size_t>(layout.inner);
  for (size_t d = 0; d < first_trailing; ++d)
    if (static_cast<int>(d) != layout.axis) out.push_back(shape[d]);
  out.push_back(layout.factor);
  out.insert(out.end(), shape.begin() + static_cast<std::ptrdiff_t>(first_trailing), shape.end());
  return out;
}

void pack_elements(const void* src, void* dst, const std::vector<int64_t>& shape, int64_t element_bytes,
                   const PackedLayout& layout) {
  copy_packed(src, dst, shape, element_bytes, layout, true);
}

void unpack_elements(const void* src, void* dst, const std::vector<int64_t>& shape, int64_t element_bytes,
                     const PackedLayout& layout) {
  copy_packed(src, dst, shape, element_bytes, layout, false);
}

std::vector<std::pair<int, PackedLayout>> packed_arguments(const State& state) {
  std::vector<std::pair<int, PackedLayout>> out;
  const std::vector<Tensor>& args = state.dag().args();
  for (size_t i = 0; i < args.size(); ++i) {
    const int s = state.stage_index(args[i]);
    if (s >= 0 && state.stage(s).layout) out.emplace_back(static_cast<int>(i), *state.stage(s).layout);
  }
  return out;
}

Result<State> without_packed_layouts(const State& state) {
  std::vector<Step> steps;
  for (const Step& step : state.steps())
    if (step.kind() != StepKind::kPackLayout) steps.push_back(step);
  return replay(state.dag_ptr(), steps);
}

}  // namespace tessera
