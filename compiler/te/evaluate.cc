#include "compiler/te/evaluate.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

#include "base/half.h"
#include "base/int_div.h"
#include "compiler/ir/scalar_semantics.h"

namespace tessera {
namespace {

// One scalar: `f` for float types, `i` for integer and bool types.
struct Val {
  double f = 0;
  int64_t i = 0;
};

bool is_modelled(DType t) {
  if (t.lanes != 1) return false;
  if (t.is_bool()) return true;
  switch (t.code) {
    case TypeCode::kFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case TypeCode::kBFloat: return t.bits == 16;
    case TypeCode::kInt:
    case TypeCode::kUInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    default: return false;
  }
}

double round_float(DType t, double v) {
  if (t.code == TypeCode::kBFloat) return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
  if (t.bits == 16) return half_to_float(float_to_half(static_cast<float>(v)));
  return t.bits == 32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// Truncation toward zero, saturating at the type's range; NaN gives 0.
int64_t float_to_int(DType t, double v) {
  if (std::isnan(v)) return 0;
  if (t.is_bool()) return v != 0;
  const double lo = t.is_uint() ? 0 : -std::ldexp(1.0, t.bits - 1);
  const double hi = t.is_uint() ? std::ldexp(1.0, t.bits) - 1 : std::ldexp(1.0, t.bits - 1) - 1;
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return t.bits >= 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
  return static_cast<int64_t>(std::trunc(v));
}

Val read_element(DType t, const void* base, int64_t i) {
  Val v;
  auto load = [&](auto sample) {
    decltype(sample) x;
    std::memcpy(&x, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof x), sizeof x);
    return x;
  };
  if (t.is_bool()) {
    v.i = load(uint8_t{}) != 0;
  } else if (t.code == TypeCode::kBFloat) {
    v.f = bfloat16_to_float(load(uint16_t{}));
  } else if (t.code == TypeCode::kFloat) {
    v.f = t.bits == 16   ? half_to_float(load(uint16_t{}))
          : t.bits == 32 ? static_cast<double>(load(float{}))
                         : load(double{});
  } else if (t.code == TypeCode::kInt) {
    v.i = t.bits == 8    ? load(int8_t{})
          : t.bits == 16 ? load(int16_t{})
          : t.bits == 32 ? load(int32_t{})
                         : load(int64_t{});
  } else {
    v.i = t.bits == 8    ? load(uint8_t{})
          : t.bits == 16 ? load(uint16_t{})
          : t.bits == 32 ? static_cast<int64_t>(load(uint32_t{}))
                         : static_cast<int64_t>(load(uint64_t{}));
  }
  return v;
}

}  // namespace

struct TensorEvaluator::Impl {
  std::vector<Tensor> tensors;                          // dag.tensors()
  std::unordered_map<const TensorNode*, int> index;     // tensor -> position in `tensors`
  std::vector<const void*> data;                        // placeholders' data, by position
  std::vector<std::unordered_map<int64_t, Val>> memo;   // reductions' elements, by position
  std::vector<std::pair<const VarNode*, int64_t>> env;  // bound loop variables, innermost last
  std::vector<int> arg_positions;                       // dag.args()[i] -> position in `tensors`
  Status error = Status::ok();

  void fail(ErrorCode code, const std::string& message) {
    if (error.is_ok()) error = Status(code, message);
  }

  int64_t lookup(const VarNode* v) {
    for (auto it = env.rbegin(); it != env.rend(); ++it)
      if (it->first == v) return it->second;
    fail(ErrorCode::kInternal, "unbound variable " + v->name);
    return 0;
  }

  Val eval(const Expr& e);
  Val binary(const Expr& e);
  Val reduce(const ReduceNode* r);
  Val tensor_read(const TensorReadNode* r);
  Val element(int t, const int64_t* at, int64_t flat);
};

Val TensorEvaluator::Impl::binary(const Expr& e) {
  const auto* b = static_cast<const BinaryNode*>(e.get());
  const DType t = b->a.dtype();
  const ExprKind k = e.kind();
  if (k == ExprKind::kAnd || k == ExprKind::kOr) {
    // Both sides are pure; short-circuiting only saves time.
    const Val x = eval(b->a);
    if ((k == ExprKind::kAnd) == (x.i == 0)) return Val{0, k == ExprKind::kOr};
    return Val{0, eval(b->b).i != 0};
  }
  const Val x = eval(b->a), y = eval(b->b);
  if (t.is_float()) {
    const double p = x.f, q = y.f;
    switch (k) {
      case ExprKind::kAdd: return Val{round_float(t, p + q), 0};
      case ExprKind::kSub: return Val{round_float(t, p - q), 0};
      case ExprKind::kMul: return Val{round_float(t, p * q), 0};
      case ExprKind::kDiv: return Val{round_float(t, p / q), 0};
      case ExprKind::kMod: return Val{round_float(t, p - std::floor(p / q) * q), 0};
      case ExprKind::kMin: return Val{p < q ? p : q, 0};
      case ExprKind::kMax: return Val{p > q ? p : q, 0};
      case ExprKind::kEQ: return Val{0, p == q};
      case ExprKind::kNE: return Val{0, p != q};
      case ExprKind::kLT: return Val{0, p < q};
      case ExprKind::kLE: return Val{0, p <= q};
      case ExprKind::kGT: return Val{0, p > q};
      case ExprKind::kGE: return Val{0, p >= q};
      default: break;
    }
  } else {
    const int64_t p = x.i, q = y.i;
    const bool is_unsigned = t.is_uint() && t.bits == 64;
    auto less = [&](int64_t a, int64_t c) {
      return is_unsigned ? static_cast<uint64_t>(a) < static_cast<uint64_t>(c) : a < c;
    };
    auto wrapped = [&](uint64_t v) { return Val{0, wrap_int(e.dtype(), static_cast<int64_t>(v))}; };
    switch (k) {
      case ExprKind::kAdd: return wrapped(static_cast<uint64_t>(p) + static_cast<uint64_t>(q));
      case ExprKind::kSub: return wrapped(static_cast<uint64_t>(p) - static_cast<uint64_t>(q));
      case ExprKind::kMul: return wrapped(static_cast<uint64_t>(p) * static_cast<uint64_t>(q));
      case ExprKind::kDiv:
      case ExprKind::kMod:
        if (q == 0) {
          fail(ErrorCode::kRuntimeError, "integer division by zero");
          return Val{};
        }
        return wrapped(static_cast<uint64_t>(k == ExprKind::kDiv ? floordiv(p, q) : floormod(p, q)));
      case ExprKind::kMin: return Val{0, less(q, p) ? q : p};
      case ExprKind::kMax: return Val{0, less(p, q) ? q : p};
      case ExprKind::kEQ: return Val{0, p == q};
      case ExprKind::kNE: return Val{0, p != q};
      case ExprKind::kLT: return Val{0, less(p, q)};
      case ExprKind::kLE: return Val{0, !less(q, p)};
      case ExprKind::kGT: return Val{0, less(q, p)};
      case ExprKind::kGE: return Val{0, !less(p, q)};
      default: break;
    }
  }
  fail(ErrorCode::kInternal, std::string("cannot evaluate ") + expr_kind_name(k));
  return Val{};
}

// Accumulates in double (floats) or int64 and rounds once, as the element is
// stored: the reference is the exact reduction, not one summation order.
Val TensorEvaluator::Impl::reduce(const ReduceNode* r) {
  const DType t = r->dtype;
  const bool is_float = t.is_float();
  Val acc;
  switch (r->op) {
    case ReduceOp::kSum: break;
    case ReduceOp::kProd: acc = Val{1, 1}; break;
    case ReduceOp::kMax:
      acc = Val{-std::numeric_limits<double>::infinity(), std::numeric_limits<int64_t>::min()};
      break;
    case ReduceOp::kMin: acc = Val{std::numeric_limits<double>::infinity(), std::numeric_limits<int64_t>::max()}; break;
  }
  const size_t base = env.size();
  for (const IterVar& axis : r->axes) {
    if (axis->extent <= 0) return is_float ? Val{round_float(t, acc.f), 0} : Val{0, wrap_int(t, acc.i)};
    env.emplace_back(axis->var.node(), 0);
  }
  while (error.is_ok()) {
    const Val v = eval(r->source);
    switch (r->op) {
      case ReduceOp::kSum:
        acc.f += v.f;
        acc.i += v.i;
        break;
      case ReduceOp::kProd:
        acc.f *= v.f;
        acc.i *= v.i;
        break;
      case ReduceOp::kMax:
        acc.f = v.f > acc.f ? v.f : acc.f;
        acc.i = std::max(acc.i, v.i);
        break;
      case ReduceOp::kMin:
        acc.f = v.f < acc.f ? v.f : acc.f;
        acc.i = std::min(acc.i, v.i);
        break;
    }
    size_t d = r->axes.size();  // odometer over the reduce axes, innermost last
    while (d > 0 && ++env[base + d - 1].second == r->axes[d - 1]->extent) env[base + --d].second = 0;
    if (d == 0) break;
  }
  env.resize(base);
  return is_float ? Val{round_float(t, acc.f), 0} : Val{0, wrap_int(t, acc.i)};
}

Val TensorEvaluator::Impl::element(int t, const int64_t* at, int64_t flat) {
  const Tensor& tensor = tensors[static_cast<size_t>(t)];
  if (data[static_cast<size_t>(t)]) return read_element(tensor->dtype, data[static_cast<size_t>(t)], flat);
  const ComputeOpNode* op = compute_op(tensor);
  if (!op) {
    fail(ErrorCode::kInternal, "placeholder " + tensor->name + " has no data");
    return Val{};
  }
  const bool memoised = !op->reduce_axes.empty();
  if (memoised)
    if (auto it = memo[static_cast<size_t>(t)].find(flat); it != memo[static_cast<size_t>(t)].end()) return it->second;
  const size_t base = env.size();
  for (size_t d = 0; d < op->axes.size(); ++d) env.emplace_back(op->axes[d]->var.node(), at[d]);
  Val v = eval(op->body);
  env.resize(base);
  // Storing rounds to the tensor's type (the body's type, unless it is cast).
  if (tensor->dtype.is_float())
    v.f = round_float(tensor->dtype, v.f);
  else
    v.i = wrap_int(tensor->dtype, v.i);
  if (memoised) memo[static_cast<size_t>(t)].emplace(flat, v);
  return v;
}

Val TensorEvaluator::Impl::tensor_read(const TensorReadNode* r) {
  auto it = index.find(r->tensor.get());
  if (it == index.end()) {
    fail(ErrorCode::kInternal, "tensor " + r->tensor->name + " is not in the DAG");
    return Val{};
  }
  const std::vector<int64_t>& shape = r->tensor->shape;
  // Reads are the evaluator's inner loop: no allocation for the usual ranks.
  int64_t small[8];
  std::vector<int64_t> large(shape.size() > 8 ? shape.size() : 0);
  int64_t* at = shape.size() > 8 ? large.data() : small;
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    at[d] = eval(r->indices[d]).i;
    if (at[d] < 0 || at[d] >= shape[d]) {
      fail(ErrorCode::kRuntimeError, "read of " + r->tensor->name + " out of bounds: index " + std::to_string(at[d]) +
                                         " of dimension " + std::to_string(d) + " (extent " + std::to_string(shape[d]) +
                                         ")");
      return Val{};
    }
    flat = flat * shape[d] + at[d];
  }
  return element(it->second, at, flat);
}

Val TensorEvaluator::Impl::eval(const Expr& e) {
  if (e.dtype().lanes != 1) {
    fail(ErrorCode::kInternal,
         std::string("vector expression ") + expr_kind_name(e.kind()) + " in a tensor expression");
    return Val{};
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: return Val{0, e.as<IntImmNode>()->value};
    case ExprKind::kFloatImm: return Val{round_float(e.dtype(), e.as<FloatImmNode>()->value), 0};
    case ExprKind::kVar: return Val{0, lookup(e.as<VarNode>())};
    case ExprKind::kNot: return Val{0, eval(e.as<NotNode>()->a).i == 0};
    case ExprKind::kSelect: {
      const auto* s = e.as<SelectNode>();
      return eval(s->cond).i != 0 ? eval(s->true_value) : eval(s->false_value);
    }
    case ExprKind::kCast: {
      const auto* c = e.as<CastNode>();
      const DType from = c->value.dtype(), to = e.dtype();
      const Val v = eval(c->value);
      if (to.is_float()) return Val{round_float(to, from.is_float() ? v.f : static_cast<double>(v.i)), 0};
      return Val{0, from.is_float() ? float_to_int(to, v.f) : wrap_int(to, v.i)};
    }
    case ExprKind::kCall: {
      const auto* c = e.as<CallNode>();
      if (c->op == CallOp::kDotU8S8)
        return Val{0, wrap_int(e.dtype(), dot_u8s8_value(eval(c->args[0]).i, eval(c->args[1]).i))};
      if (c->op == CallOp::kDotBf16) return Val{dot_bf16_value(eval(c->args[0]).i, eval(c->args[1]).i), 0};
      if (c->op == CallOp::kPackBf16) return Val{0, pack_bf16_value(eval(c->args[0]).f, eval(c->args[1]).f)};
      if (c->op == CallOp::kAbs && !e.dtype().is_float()) {
        const int64_t x = eval(c->args[0]).i;
        return Val{0, wrap_int(e.dtype(), x < 0 ? -x : x)};
      }
      const double x = eval(c->args[0]).f, y = c->args.size() > 1 ? eval(c->args[1]).f : 0.0;
      return Val{round_float(e.dtype(), call_value(c->op, x, y)), 0};
    }
    case ExprKind::kTensorRead: return tensor_read(e.as<TensorReadNode>());
    case ExprKind::kReduce: return reduce(e.as<ReduceNode>());
    case ExprKind::kLoad:
    case ExprKind::kRamp:
    case ExprKind::kBroadcast:
      fail(ErrorCode::kInternal, std::string(expr_kind_name(e.kind())) + " in a tensor expression");
      return Val{};
    default: return binary(e);
  }
}

TensorEvaluator::TensorEvaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TensorEvaluator::TensorEvaluator(TensorEvaluator&&) noexcept = default;
TensorEvaluator& TensorEvaluator::operator=(TensorEvaluator&&) noexcept = default;
TensorEvaluator::~TensorEvaluator() = default;

Result<TensorEvaluator> TensorEvaluator::make(const ComputeDAG& dag, std::vector<const void*> args) {
  if (args.size() != dag.args().size())
    return Status(ErrorCode::kInvalidArgument, "the DAG has " + std::to_string(dag.args().size()) +
                                                   " arguments, got data for " + std::to_string(args.size()));
  auto impl = std::make_unique<Impl>();
  impl->tensors = dag.tensors();
  impl->data.assign(impl->tensors.size(), nullptr);
  impl->memo.resize(impl->tensors.size());
  for (size_t i = 0; i < impl->tensors.size(); ++i) {
    const Tensor& t = impl->tensors[i];
    if (!is_modelled(t->dtype))
      return Status(ErrorCode::kInvalidArgument, "tensor " + t->name + " of type " + t->dtype.to_string() +
                                                     ": the evaluator models float32/64, integers and bool only");
    impl->index.emplace(t.get(), static_cast<int>(i));
  }
  for (size_t a = 0; a < args.size(); ++a) {
    const Tensor& t = dag.args()[a];
    impl->arg_positions.push_back(dag.index_of(t));
    if (!is_placeholder(t)) continue;
    if (!args[a])
      return Status(ErrorCode::kInvalidArgument, "no data for argument " + std::to_string(a) + " (" + t->name + ")");
    impl->data[static_cast<size_t>(dag.index_of(t))] = args[a];
  }
  return TensorEvaluator(std::move(impl));
}

Result<std::vector<double>> TensorEvaluator::evaluate(int arg, const std::vector<int64_t>& points) {
  Impl& m = *impl_;
  if (arg < 0 || static_cast<size_t>(arg) >= m.arg_positions.size())
    return Status(ErrorCode::kInvalidArgument, "no argument " + std::to_string(arg));
  const int position = m.arg_positions[static_cast<size_t>(arg)];
  const Tensor& t = m.tensors[static_cast<size_t>(position)];
  int64_t numel = 1;
  for (int64_t d : t->shape) numel *= d;
  std::vector<double> out;
  out.reserve(points.size());
  std::vector<int64_t> at(t->shape.size());
  for (int64_t flat : points) {
    if (flat < 0 || flat >= numel)
      return Status(ErrorCode::kInvalidArgument, "point " + std::to_string(flat) + " is outside " + t->name);
    int64_t rest = flat;
    for (size_t d = t->shape.size(); d-- > 0;) {
      at[d] = rest % t->shape[d];
      rest /= t->shape[d];
    }
    const Val v = m.element(position, at.data(), flat);
    if (!m.error.is_ok()) {
      Status st = m.error;
      m.error = Status::ok();
      return st.with_context("evaluating " + t->name);
    }
    out.push_back(t->dtype.is_float() ? v.f : static_cast<double>(v.i));
  }
  return out;
}

}  // namespace tessera
