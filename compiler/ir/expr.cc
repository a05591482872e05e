#include "compiler/ir/expr.h"

#include <cmath>
#include <limits>

#include "base/check.h"

namespace tessera {

const char* expr_kind_name(ExprKind kind) {
  switch (kind) {
#define TESSERA_X(name) \
  case ExprKind::k##name: return #name;
    TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  return "?";
}

Expr::Expr(int value) : Expr(make_int(value)) {}
Expr::Expr(int64_t value) : Expr(make_int(value)) {}
Expr::Expr(float value) : Expr(make_float(value)) {}
Expr::Expr(double value) : Expr(make_float(value)) {}

Var::Var(std::string name, DType t) : Expr(Ref<const ExprNode>(new VarNode(t, std::move(name)))) {}

Expr make_int(int64_t value, DType t) {
  TESSERA_CHECK(t.is_integral() && t.is_scalar()) << "integer constant of type " << t.to_string();
  return Expr(Ref<const ExprNode>(new IntImmNode(t, value)));
}

Expr make_bool(bool value) {
  return make_int(value ? 1 : 0, DType::boolean());
}

Expr make_float(double value, DType t) {
  TESSERA_CHECK(t.is_float() && t.is_scalar()) << "float constant of type " << t.to_string();
  return Expr(Ref<const ExprNode>(new FloatImmNode(t, value)));
}

Expr make_const(DType t, double value) {
  Expr scalar =
      t.is_float() ? make_float(value, t.element_of()) : make_int(static_cast<int64_t>(value), t.element_of());
  return t.lanes > 1 ? make_broadcast(scalar, t.lanes) : scalar;
}

bool is_binary(ExprKind kind) {
  return kind >= ExprKind::kAdd && kind <= ExprKind::kOr;
}
bool is_comparison(ExprKind kind) {
  return kind >= ExprKind::kEQ && kind <= ExprKind::kGE;
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  TESSERA_CHECK(is_binary(kind)) << expr_kind_name(kind) << " is not a binary operator";
  TESSERA_CHECK(a.defined() && b.defined()) << expr_kind_name(kind) << " of an undefined operand";
  TESSERA_CHECK(a.dtype() == b.dtype()) << expr_kind_name(kind) << " operands must have one type, not "
                                        << a.dtype().to_string() << " and " << b.dtype().to_string();
  DType t = a.dtype();
  if (is_comparison(kind)) t = DType::boolean(t.lanes);
  if (kind == ExprKind::kAnd || kind == ExprKind::kOr)
    TESSERA_CHECK(t.is_bool()) << expr_kind_name(kind) << " of " << t.to_string() << " operands";
  return Expr(Ref<const ExprNode>(new BinaryNode(kind, t, std::move(a), std::move(b))));
}

Expr make_not(Expr a) {
  TESSERA_CHECK(a.defined() && a.dtype().is_bool()) << "Not of a non-bool operand";
  DType t = a.dtype();
  return Expr(Ref<const ExprNode>(new NotNode(t, std::move(a))));
}

Expr make_select(Expr cond, Expr t, Expr f) {
  TESSERA_CHECK(cond.defined() && t.defined() && f.defined()) << "Select of an undefined operand";
  TESSERA_CHECK(cond.dtype().is_bool()) << "Select condition of type " << cond.dtype().to_string();
  TESSERA_CHECK(t.dtype() == f.dtype()) << "Select branches of types " << t.dtype().to_string() << " and "
                                        << f.dtype().to_string();
  TESSERA_CHECK(cond.dtype().lanes == 1 || cond.dtype().lanes == t.dtype().lanes)
      << "Select of " << cond.dtype().lanes << " condition lanes and " << t.dtype().lanes << " value lanes";
  DType type = t.dtype();
  return Expr(Ref<const ExprNode>(new SelectNode(type, std::move(cond), std::move(t), std::move(f))));
}

Expr make_cast(DType t, Expr value) {
  TESSERA_CHECK(value.defined() && t.lanes == value.dtype().lanes)
      << "Cast to " << t.to_string() << " changes the lanes of its operand";
  if (value.dtype() == t) return value;
  return Expr(Ref<const ExprNode>(new CastNode(t, std::move(value))));
}

const char* call_op_name(CallOp op) {
  switch (op) {
#define TESSERA_CALL_OP_NAME(e, s) \
  case CallOp::e: return s;
    TESSERA_CALL_OPS(TESSERA_CALL_OP_NAME)
#undef TESSERA_CALL_OP_NAME
  }
  return "?";
}

Expr make_call(CallOp op, std::vector<Expr> args) {
  TESSERA_CHECK(!args.empty()) << call_op_name(op) << " without arguments";
  DType t = args[0].dtype();
  for (const Expr& a : args)
    TESSERA_CHECK(a.defined() && a.dtype() == t) << call_op_name(op) << " arguments of different types";
  if (is_dot_product(op))
    TESSERA_CHECK(t.element_of() == DType::i32()) << call_op_name(op) << " of " << t.to_string();
  else if (op == CallOp::kPackBf16)
    TESSERA_CHECK(t.element_of() == DType::f32() || t.element_of() == DType::bf16())
        << call_op_name(op) << " of " << t.to_string();
  else
    TESSERA_CHECK(t.is_float() || op == CallOp::kAbs) << call_op_name(op) << " of " << t.to_string();
  TESSERA_CHECK((op == CallOp::kPow || is_dot_product(op) || op == CallOp::kPackBf16) == (args.size() == 2))
      << call_op_name(op) << " with " << args.size() << " arguments";
  const DType result = op == CallOp::kDotBf16 ? DType::f32(t.lanes) : op == CallOp::kPackBf16 ? DType::i32(t.lanes) : t;
  return Expr(Ref<const ExprNode>(new CallNode(result, op, std::move(args))));
}

Buffer make_buffer(std::string name, DType dtype, std::vector<int64_t> shape, MemoryScope scope) {
  return make_ref<const BufferNode>(std::move(name), dtype, std::move(shape), scope);
}

Expr make_load(Buffer buffer, Expr index, Expr predicate) {
  TESSERA_CHECK(buffer.defined() && index.defined()) << "Load of an undefined buffer or index";
  TESSERA_CHECK(index.dtype().element_of() == kIndexType)
      << "Load of " << buffer->name << " at an index of type " << index.dtype().to_string();
  TESSERA_CHECK(!predicate.defined() || predicate.dtype() == DType::boolean(index.dtype().lanes))
      << "Load of " << buffer->name << " with a predicate of type " << predicate.dtype().to_string();
  DType t = buffer->dtype.with_lanes(index.dtype().lanes);
  return Expr(Ref<const ExprNode>(new LoadNode(t, std::move(buffer), std::move(index), std::move(predicate))));
}

Expr make_ramp(Expr base, Expr stride, int lanes) {
  TESSERA_CHECK(base.defined() && stride.defined()) << "Ramp of an undefined base or stride";
  TESSERA_CHECK(base.dtype().is_scalar() && base.dtype() == stride.dtype() && lanes > 1)
      << "Ramp of base " << base.dtype().to_string() << ", stride " << stride.dtype().to_string() << ", " << lanes
      << " lanes";
  DType t = base.dtype().with_lanes(lanes);
  return Expr(Ref<const ExprNode>(new RampNode(t, std::move(base), std::move(stride), lanes)));
}

Expr make_broadcast(Expr value, int lanes) {
  TESSERA_CHECK(value.defined() && value.dtype().is_scalar() && lanes > 1) << "Broadcast to " << lanes << " lanes";
  DType t = value.dtype().with_lanes(lanes);
  return Expr(Ref<const ExprNode>(new BroadcastNode(t, std::move(value), lanes)));
}

Expr make_tensor_read(Tensor tensor, std::vector<Expr> indices) {
  TESSERA_CHECK(tensor.defined()) << "read of an undefined tensor";
  TESSERA_CHECK(static_cast<int>(indices.size()) == tensor->ndim())
      << "read of " << tensor->name << " with " << indices.size() << " indices, it has " << tensor->ndim()
      << " dimensions";
  for (const Expr& i : indices)
    TESSERA_CHECK(i.defined() && i.dtype() == kIndexType) << "read of " << tensor->name << " at a non-index";
  DType t = tensor->dtype;
  return Expr(Ref<const ExprNode>(new TensorReadNode(t, std::move(tensor), std::move(indices))));
}

IterVar make_iter_var(std::string name, int64_t extent, IterKind kind) {
  TESSERA_CHECK(extent > 0) << "axis " << name << " of extent " << extent;
  return make_ref<const IterVarNode>(Var(std::move(name)), extent, kind);
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

Expr reduce_identity(ReduceOp op, DType t) {
  double lowest, highest;
  if (t.is_float()) {
    lowest = -std::numeric_limits<double>::infinity();
    highest = std::numeric_limits<double>::infinity();
  } else if (t.is_uint()) {
    lowest = 0;
    highest = t.bits >= 64 ? 1.8e19 : std::ldexp(1.0, t.bits) - 1;
  } else {
    lowest = -std::ldexp(1.0, t.bits - 1);
    highest = std::ldexp(1.0, t.bits - 1) - 1;
  }
  switch (op) {
    case ReduceOp::kSum: return make_const(t, 0);
    case ReduceOp::kProd: return make_const(t, 1);
    case ReduceOp::kMax: return make_const(t, lowest);
    case ReduceOp::kMin: return make_const(t, highest);
  }
  return Expr();
}

Expr reduce_combine(ReduceOp op, Expr acc, Expr value) {
  switch (op) {
    case ReduceOp::kSum: return make_binary(ExprKind::kAdd, std::move(acc), std::move(value));
    case ReduceOp::kProd: return make_binary(ExprKind::kMul, std::move(acc), std::move(value));
    case ReduceOp::kMax: return make_binary(ExprKind::kMax, std::move(acc), std::move(value));
    case ReduceOp::kMin: return make_binary(ExprKind::kMin, std::move(acc), std::move(value));
  }
  return Expr();
}

Expr make_reduce(ReduceOp op, Expr source, std::vector<IterVar> axes) {
  TESSERA_CHECK(source.defined()) << reduce_op_name(op) << " of an undefined source";
  TESSERA_CHECK(!axes.empty()) << reduce_op_name(op) << " over no axes";
  for (const IterVar& a : axes)
    TESSERA_CHECK(a->kind == IterKind::kReduce) << reduce_op_name(op) << " over spatial axis " << a->var.name();
  DType t = source.dtype();
  return Expr(Ref<const ExprNode>(new ReduceNode(t, op, std::move(source), std::move(axes))));
}

bool is_const_int(const Expr& e, int64_t* value) {
  if (!e.defined()) return false;
  if (const auto* imm = e.as<IntImmNode>()) {
    if (value) *value = imm->value;
    return true;
  }
  if (const auto* bc = e.as<BroadcastNode>()) return is_const_int(bc->value, value);
  return false;
}

bool is_const_float(const Expr& e, double* value) {
  if (!e.defined()) return false;
  if (const auto* imm = e.as<FloatImmNode>()) {
    if (value) *value = imm->value;
    return true;
  }
  if (const auto* bc = e.as<BroadcastNode>()) return is_const_float(bc->value, value);
  return false;
}

bool is_const_value(const Expr& e, int64_t v) {
  int64_t x;
  return is_const_int(e, &x) && x == v;
}

}  // namespace tessera
