// Packed layouts: a kernel argument stored in the order its kernel reads it.
//
// pack_layout(stage, axis, factor) stores placeholder argument T of shape
// [d0, ..., dn] as
//
//   [d_axis / factor, d0, ..., (d_axis left out), ..., dn, factor]
//
// so that a loop nest whose innermost (vectorized) loop runs over `factor`
// consecutive values of d_axis, and whose reduction runs over the other
// dimensions, reads T as one sequential stream. An HWIO conv weight packed
// on its output channels (axis 3) by the micro-kernel's vector width becomes
// [K/kv][R][S][C][kv]: each block of output channels streams its weights
// contiguously instead of kv values every C x K elements.
//
// With `inner` > 0 the last `inner` dimensions stay innermost, after the
// factor: bfloat16 weights read as pairs of neighbouring elements
// (conv2d_nhwc_bf16's [R][S][C/2][K][2]) packed on K by kv are
// [K/kv][R][S][C/2][kv][2], each pair still one 32-bit word.
//
// A factor that does not divide d_axis pads the last block with zeros: the
// storage is [ceil(d_axis / factor), ..., factor], and a padded tile
// (PadTileStep) reads the padding without a guard or a mask.
//
// Only the storage changes: the tensor keeps its logical shape in the DAG,
// the lowering flattens reads in the packed order, and whoever supplies the
// data (the model compiler for constants, a reference check, a test) packs
// it with pack_elements. Weights are constants, so packing them costs
// nothing at run time.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera {

class State;

/// How one argument is stored: `axis` split into (axis / factor) outermost
/// and (axis % factor) innermost, but for the last `inner` dimensions.
struct PackedLayout {
  int axis = 0;
  int64_t factor = 1;
  int inner = 0;

  bool operator==(const PackedLayout& o) const = default;
};

/// The storage shape of `shape` packed by `layout` (the axis's blocks rounded up).
std::vector<int64_t> packed_shape(const std::vector<int64_t>& shape, const PackedLayout& layout);

/// Copies `src` (C order over `shape`, `element_bytes` an element) into `dst`
/// in `layout`'s order; unpack_elements is the inverse. The buffers must not
/// overlap; `dst` of pack_elements holds packed_shape's elements, its padding
/// zeroed.
void pack_elements(const void* src, void* dst, const std::vector<int64_t>& shape, int64_t element_bytes,
                   const PackedLayout& layout);
void unpack_elements(const void* src, void* dst, const std::vector<int64_t>& shape, int64_t element_bytes,
                     const PackedLayout& layout);

/// The packed arguments of `state`: (index in dag().args(), layout), by index.
std::vector<std::pair<int, PackedLayout>> packed_arguments(const State& state);

/// `state` with every argument stored as it is: its steps replayed without
/// the pack_layout ones (which change no loop, so the rest still applies).
Result<State> without_packed_layouts(const State& state);

}  // namespace tessera
