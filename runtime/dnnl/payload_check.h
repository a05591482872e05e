// The dnnl module's payload, checked before anything is built from it.
//
// A package's payload is data the module must not trust: the region is
// built over the call's buffers, so a shape larger than its buffer would
// make oneDNN read or write past it, an input list longer than the call
// would read pointers that are not there, and a group count of zero would
// divide by zero. check_payload verifies every field the builder reads
// (types, ranks, ranges, ids, the weights' and biases' dimensions against
// the operator's, and each argument's bytes against its buffer's) and
// throws std::runtime_error naming the first field at fault.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace tessera::dnnl_module {

/// Throws std::runtime_error when `payload` is not a region the module can
/// build over `num_args` buffers of `arg_bytes[i]` bytes each (its inputs,
/// then its outputs).
void check_payload(const nlohmann::json& payload, const int64_t* arg_bytes, int64_t num_args);

}  // namespace tessera::dnnl_module
