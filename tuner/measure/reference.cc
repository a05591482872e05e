#include "tuner/measure/reference.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "base/half.h"
#include "compiler/te/evaluate.h"
#include "runtime/ndarray.h"

namespace tessera::tuner {
namespace {

// Appends `v` as one element of `t` (a type the evaluator models).
void append_element(DType t, double v, std::string& out) {
  auto put = [&](auto x) { out.append(reinterpret_cast<const char*>(&x), sizeof x); };
  if (t.is_bool()) return put(static_cast<uint8_t>(v != 0));
  if (t.code == TypeCode::kBFloat) return put(float_to_bfloat16(static_cast<float>(v)));
  if (t.code == TypeCode::kFloat && t.bits == 16) return put(float_to_half(static_cast<float>(v)));
  if (t.code == TypeCode::kFloat) return t.bits == 32 ? put(static_cast<float>(v)) : put(v);
  const auto i = static_cast<int64_t>(v);
  switch (t.bits) {
    case 8: return put(static_cast<uint8_t>(i));
    case 16: return put(static_cast<uint16_t>(i));
    case 32: return put(static_cast<uint32_t>(i));
    default: return put(static_cast<uint64_t>(i));
  }
}

}  // namespace

std::vector<int64_t> check_points(const std::vector<int64_t>& shape, uint64_t seed, const CheckPointOptions& options) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<int64_t> points;
  if (numel <= 0) return points;
  if (numel <= options.whole_below) {
    points.resize(static_cast<size_t>(numel));
    for (int64_t i = 0; i < numel; ++i) points[static_cast<size_t>(i)] = i;
    return points;
  }
  const size_t rank = shape.size();
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto flat = [&](const std::vector<int64_t>& at) {
    int64_t f = 0;
    for (size_t d = 0; d < rank; ++d) f = f * shape[d] + at[d];
    return f;
  };
  auto random_point = [&] {
    std::vector<int64_t> at(rank);
    for (size_t d = 0; d < rank; ++d) at[d] = uniform(0, shape[d] - 1);
    return at;
  };
  // Corners: each dimension at its first or its last index.
  for (uint64_t mask = 0; mask < (uint64_t{1} << rank); ++mask) {
    std::vector<int64_t> at(rank);
    for (size_t d = 0; d < rank; ++d) at[d] = (mask >> d) & 1 ? shape[d] - 1 : 0;
    points.push_back(flat(at));
  }
  for (size_t d = 0; d < rank; ++d) {
    for (int i = 0; i < options.face_points; ++i) {
      std::vector<int64_t> at = random_point();
      at[d] = i % 2 ? shape[d] - 1 : 0;
      points.push_back(flat(at));
    }
    for (int i = 0; i < options.tail_points; ++i) {
      std::vector<int64_t> at = random_point();
      at[d] = uniform(std::max<int64_t>(0, shape[d] - 16), shape[d] - 1);
      points.push_back(flat(at));
    }
  }
  for (int i = 0; i < options.random_points; ++i) points.push_back(uniform(0, numel - 1));
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

double check_tolerance(const ComputeDAG& dag, double floor) {
  double terms = 1, unit = std::ldexp(1.0, -24);
  for (const Tensor& t : dag.tensors()) {
    const ComputeOpNode* op = compute_op(t);
    if (!op) continue;
    double k = 1;
    for (const IterVar& axis : op->reduce_axes) k *= static_cast<double>(axis->extent);
    terms = std::max(terms, k);
    // A tensor computed in float16 or bfloat16 rounds at their precision.
    if (t->dtype == DType::f16()) unit = std::max(unit, std::ldexp(1.0, -11));
    if (t->dtype == DType::bf16()) unit = std::max(unit, std::ldexp(1.0, -8));
  }
  return std::max(floor, 4.0 * terms * unit);
}

Result<rpc::ReferenceCheck> evaluate_reference(const ComputeDAG& dag,
                                               const std::vector<std::pair<int, PackedLayout>>& packed,
                                               uint64_t input_seed, std::vector<int64_t> points, double tolerance) {
  const std::vector<Tensor>& args = dag.args();
  std::vector<runtime::NDArray> arrays;
  std::vector<const void*> data(args.size(), nullptr);
  arrays.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_placeholder(args[i])) continue;
    const PackedLayout* layout = nullptr;
    for (const auto& [arg, l] : packed)
      if (static_cast<size_t>(arg) == i) layout = &l;
    const std::vector<int64_t>& shape = args[i]->shape;
    TESSERA_ASSIGN_OR_RETURN(runtime::NDArray a,
                             runtime::NDArray::create(layout ? packed_shape(shape, *layout) : shape, args[i]->dtype));
    a.fill_random(input_seed + i);
    if (layout) {
      // A packed argument: the worker's bytes, read in the packed order.
      TESSERA_ASSIGN_OR_RETURN(runtime::NDArray logical, runtime::NDArray::create(shape, a.dtype()));
      unpack_elements(a.raw_data(), logical.raw_data(), shape, a.dtype().storage_bytes(), *layout);
      a = std::move(logical);
    }
    arrays.push_back(std::move(a));
    data[i] = arrays.back().raw_data();
  }
  TESSERA_ASSIGN_OR_RETURN(TensorEvaluator evaluator, TensorEvaluator::make(dag, std::move(data)));
  const int output = static_cast<int>(args.size()) - 1;
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> values, evaluator.evaluate(output, points));
  rpc::ReferenceCheck check;
  check.expected_output.reserve(values.size() * static_cast<size_t>(args.back()->dtype.storage_bytes()));
  for (double v : values) append_element(args.back()->dtype, v, check.expected_output);
  check.tolerance = tolerance;
  check.points = std::move(points);
  return check;
}

}  // namespace tessera::tuner
