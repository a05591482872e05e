#include "tuner/task.h"

namespace tessera::tuner {

std::vector<rpc::ArgSpec> Task::arg_specs(const std::vector<std::pair<int, PackedLayout>>& packed) const {
  std::vector<rpc::ArgSpec> specs;
  for (const Tensor& t : dag->args()) specs.push_back({t->shape, t->dtype});
  for (const auto& [arg, layout] : packed)
    specs[static_cast<size_t>(arg)].shape = packed_shape(specs[static_cast<size_t>(arg)].shape, layout);
  return specs;
}

}  // namespace tessera::tuner
