#include "compiler/graph/pack_words.h"

#include <cstring>

namespace tessera::graph {

Result<Constant> pack_int8_words(const Constant& c, size_t axis) {
  if (c.dtype != DType::i8() || axis >= c.shape.size() || c.shape[axis] % 4 != 0)
    return Status(ErrorCode::kInvalidArgument, "packing " + c.dtype.to_string() + " " + shape_string(c.shape) +
                                                   " four to a word along axis " + std::to_string(axis) +
                                                   ": it must be int8 with a multiple of 4 there");
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= c.shape[d];
  for (size_t d = axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
  const int64_t words = c.shape[axis] / 4;
  Constant out;
  out.dtype = DType::i32();
  out.shape = c.shape;
  out.shape[axis] = words;
  out.bytes.resize(c.bytes.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < words; ++q)
      for (int64_t i = 0; i < inner; ++i) {
        uint8_t word[4];  // little-endian, as the int32 is stored
        for (int64_t r = 0; r < 4; ++r)
          word[r] = c.bytes[static_cast<size_t>((o * c.shape[axis] + 4 * q + r) * inner + i)];
        std::memcpy(&out.bytes[static_cast<size_t>(((o * words + q) * inner + i) * 4)], word, 4);
      }
  return out;
}

}  // namespace tessera::graph
