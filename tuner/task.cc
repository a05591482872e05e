#include "tuner/task.h"

namespace tessera::tuner {

std::vector<rpc::ArgSpec> Task::arg_specs() const {
  std::vector<rpc::ArgSpec> specs;
  for (const Tensor& t : dag->args()) specs.push_back({t->shape, t->dtype});
  return specs;
}

}  // namespace tessera::tuner
