// Constant evaluation of the operators that constant folding handles. It works
// on doubles (exact for every int64 a shape holds, and for float32), then
// converts to the output's type.
#include <cmath>
#include <functional>

#include "compiler/graph/passes.h"

namespace tessera::graph {

using ops::BinaryFn;

namespace {

Status cannot(const Node& n, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument,
                std::string("cannot fold ") + op_kind_name(n.kind) + " node " + n.name + ": " + why);
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// The multi-index of flat position i in `shape`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return idx;
}

// Flat position in `shape` of the NumPy-broadcast image of output index `out_idx`.
int64_t broadcast_offset(const std::vector<int64_t>& out_idx, const std::vector<int64_t>& shape) {
  const size_t offset = out_idx.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : out_idx[offset + d]);
  return flat;
}

double apply_binary(OpKind k, double a, double b, bool integral) {
  switch (k) {
    case OpKind::kAdd: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    case OpKind::kDiv: return integral ? std::trunc(a / b) : a / b;
    case OpKind::kMax: return a > b ? a : b;
    case OpKind::kMin: return a < b ? a : b;
    default: return std::pow(a, b);
  }
}

Result<double> apply_unary(const Node& n, double x) {
  switch (n.kind) {
    case OpKind::kRelu: return x > 0 ? x : 0.0;
    case OpKind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpKind::kTanh: return std::tanh(x);
    case OpKind::kErf: return std::erf(x);
    case OpKind::kHardSwish: return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
    case OpKind::kLeakyRelu: return x > 0 ? x : std::get<ScalarAttrs>(n.attrs).value * x;
    case OpKind::kClip: {
      const auto& a = std::get<AffineAttrs>(n.attrs);
      return std::min(std::max(x, a.alpha), a.beta);
    }
    case OpKind::kHardSigmoid: {
      const auto& a = std::get<AffineAttrs>(n.attrs);
      return std::max(0.0, std::min(1.0, a.alpha * x + a.beta));
    }
    case OpKind::kCast: return x;
    case OpKind::kUnary: {
      const auto& a = std::get<UnaryAttrs>(n.attrs);
      return ops::unary_reference(a.fn, x, a.params);
    }
    default: return cannot(n, "not an elementwise operator");
  }
}

}  // namespace

bool is_foldable(OpKind kind) {
  switch (kind) {
    case OpKind::kConv: case OpKind::kConvTranspose: case OpKind::kGemm: case OpKind::kMatMul: case OpKind::kMaxPool: case OpKind::kAvgPool:
    case OpKind::kGlobalAvgPool: case OpKind::kSoftmax: case OpKind::kReduceMean: case OpKind::kBatchNorm:
    case OpKind::kReduceSum: case OpKind::kReduceMax: case OpKind::kLayerNorm: case OpKind::kResize:
    case OpKind::kReduceMin: case OpKind::kReduceProd: case OpKind::kArgMax: case OpKind::kArgMin:
    case OpKind::kCumSum: case OpKind::kGatherND: case OpKind::kScatterElements: case OpKind::kScatterND:
    case OpKind::kEinsum: case OpKind::kGridSample:
      return false;
    default:
      return true;
  }
}

Result<Constant> evaluate_node(const Graph& g, const Node& n, const std::vector<const Constant*>& inputs) {
  if (n.outputs.size() != 1) return cannot(n, "more than one output");
  const Value& out = g.value(n.outputs[0]);
  const int64_t total = shape_size(out.shape);
  std::vector<double> result(static_cast<size_t>(total));
  if (n.kind == OpKind::kShape) {
    const auto& in_shape = g.value(n.inputs.at(0)).shape;
    return Constant::from_int64s(out.shape, in_shape);
  }
  if (!is_foldable(n.kind)) return cannot(n, "not a foldable operator");
  for (const Constant* c : inputs)
    if (c == nullptr) return cannot(n, "an input is not constant");
  switch (n.kind) {
    case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kPow:
    case OpKind::kMax: case OpKind::kMin: {
      const Constant& a = *inputs.at(0);
      const Constant& b = *inputs.at(1);
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        result[i] = apply_binary(n.kind, a.at(broadcast_offset(idx, a.shape)), b.at(broadcast_offset(idx, b.shape)),
                                 out.dtype.is_integral());
      }
      break;
    }
    case OpKind::kBinary: {
      const BinaryFn fn = std::get<BinaryAttrs>(n.attrs).fn;
      const Constant& a = *inputs.at(0);
      const Constant& b = *inputs.at(1);
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        result[i] = ops::binary_reference(fn, a.at(broadcast_offset(idx, a.shape)), b.at(broadcast_offset(idx, b.shape)),
                                          a.dtype);
      }
      break;
    }
    case OpKind::kWhere: case OpKind::kExpand: {
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        auto at = [&](size_t k) { return inputs.at(k)->at(broadcast_offset(idx, inputs.at(k)->shape)); };
        result[i] = n.kind == OpKind::kExpand ? at(0) : at(0) != 0.0 ? at(1) : at(2);
      }
      break;
    }
    case OpKind::kTile: {
      const Constant& x = *inputs.at(0);
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat = flat * x.shape[d] + idx[d] % x.shape[d];
        result[i] = x.at(flat);
      }
      break;
    }
    case OpKind::kGatherElements: {
      const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
      const Constant& data = *inputs.at(0);
      const Constant& indices = *inputs.at(1);
      for (int64_t i = 0; i < total; ++i) {
        auto idx = unravel(i, out.shape);
        auto j = static_cast<int64_t>(indices.at(i));
        if (j < 0) j += data.shape[axis];
        if (j < 0 || j >= data.shape[axis]) return cannot(n, "index " + std::to_string(j) + " is out of range");
        idx[axis] = j;
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d) flat = flat * data.shape[d] + idx[d];
        result[i] = data.at(flat);
      }
      break;
    }
    case OpKind::kReshape:
      result = inputs.at(0)->to_doubles();
      break;
    case OpKind::kTranspose: {
      const auto& perm = std::get<PermAttrs>(n.attrs).perm;
      const Constant& x = *inputs.at(0);
      const auto in_strides = strides_of(x.shape);
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        int64_t flat = 0;
        for (size_t d = 0; d < perm.size(); ++d) flat += idx[d] * in_strides[perm[d]];
        result[i] = x.at(flat);
      }
      break;
    }
    case OpKind::kConcat: {
      const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
      for (int64_t i = 0; i < total; ++i) {
        auto idx = unravel(i, out.shape);
        for (const Constant* c : inputs) {
          if (idx[axis] < c->shape[axis]) {
            int64_t flat = 0;
            for (size_t d = 0; d < idx.size(); ++d) flat = flat * c->shape[d] + idx[d];
            result[i] = c->at(flat);
            break;
          }
          idx[axis] -= c->shape[axis];
        }
      }
      break;
    }
    case OpKind::kSlice: case OpKind::kPad: {
      const Constant& x = *inputs.at(0);
      const auto in_strides = strides_of(x.shape);
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        int64_t flat = 0;
        bool inside = true;
        for (size_t d = 0; d < idx.size(); ++d) {
          int64_t k = 0;
          if (n.kind == OpKind::kSlice) {
            const auto& a = std::get<SliceAttrs>(n.attrs);
            k = a.starts[d] + idx[d] * a.steps[d];
          } else {
            const auto& a = std::get<PadAttrs>(n.attrs);
            k = pad_source_index(a.mode, idx[d] - a.before[d], x.shape[d]);
            inside = inside && k >= 0 && k < x.shape[d];
          }
          flat += k * in_strides[d];
        }
        result[i] = inside ? x.at(flat) : std::get<PadAttrs>(n.attrs).value;
      }
      break;
    }
    case OpKind::kGather: {
      const auto axis = static_cast<size_t>(std::get<AxisAttrs>(n.attrs).axis);
      const Constant& data = *inputs.at(0);
      const Constant& indices = *inputs.at(1);
      const size_t q = indices.shape.size();
      for (int64_t i = 0; i < total; ++i) {
        const auto idx = unravel(i, out.shape);
        int64_t at = 0;
        for (size_t d = 0; d < q; ++d) at = at * indices.shape[d] + idx[axis + d];
        auto j = static_cast<int64_t>(indices.at(at));
        if (j < 0) j += data.shape[axis];
        if (j < 0 || j >= data.shape[axis]) return cannot(n, "index " + std::to_string(j) + " is out of range");
        int64_t flat = 0;
        for (size_t d = 0; d < data.shape.size(); ++d) {
          const int64_t k = d < axis ? idx[d] : d == axis ? j : idx[d + q - 1];
          flat = flat * data.shape[d] + k;
        }
        result[i] = data.at(flat);
      }
      break;
    }
    default: {
      const Constant& x = *inputs.at(0);
      for (int64_t i = 0; i < total; ++i) {
        TESSERA_ASSIGN_OR_RETURN(result[i], apply_unary(n, x.at(i)));
        if (n.kind == OpKind::kCast && out.dtype.is_integral() && !out.dtype.is_bool()) result[i] = std::trunc(result[i]);
      }
    }
  }
  return Constant::from_doubles(out.dtype, out.shape, result);
}

}  // namespace tessera::graph
