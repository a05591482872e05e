#include "runtime/cold_arguments.h"

#include <algorithm>
#include <string>

namespace tessera::runtime {

Result<ColdArguments> ColdArguments::make(std::vector<NDArray>& arrays, const std::vector<int>& cold,
                                          int64_t min_bytes) {
  std::vector<bool> seen(arrays.size(), false);
  int64_t cold_bytes = 0;
  for (int index : cold) {
    if (index < 0 || static_cast<size_t>(index) >= arrays.size())
      return Status(ErrorCode::kInvalidArgument, "cold argument " + std::to_string(index) + " out of range (" +
                                                     std::to_string(arrays.size()) + " arguments)");
    if (seen[static_cast<size_t>(index)])
      return Status(ErrorCode::kInvalidArgument, "cold argument " + std::to_string(index) + " given twice");
    seen[static_cast<size_t>(index)] = true;
    cold_bytes += arrays[static_cast<size_t>(index)].nbytes();
  }
  int64_t lists = 1;
  if (cold_bytes > 0) lists = std::clamp<int64_t>((min_bytes + cold_bytes - 1) / cold_bytes, 1, kMaxColdArgumentSets);

  ColdArguments out;
  std::vector<void*> original;
  for (NDArray& a : arrays) original.push_back(a.raw_data());
  out.sets_.push_back(original);
  for (int64_t l = 1; l < lists; ++l) {
    std::vector<void*> set = original;
    for (int index : cold) {
      TESSERA_ASSIGN_OR_RETURN(NDArray copy, arrays[static_cast<size_t>(index)].copy());
      set[static_cast<size_t>(index)] = copy.raw_data();  // the storage stays put when the array moves
      out.copies_.push_back(std::move(copy));
    }
    out.sets_.push_back(std::move(set));
  }
  return out;
}

}  // namespace tessera::runtime
