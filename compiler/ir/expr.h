// Expressions of the loop IR and of tensor expressions.
//
// Node kinds are listed once in TESSERA_EXPR_KINDS; every visitor switches over
// them, so adding a kind fails to compile where it must be handled. Nodes are
// immutable and built by `make()` functions that check their invariants.
//
// Semantics:
//  - Integer Div and Mod round toward negative infinity (floor division, and a
//    remainder with the sign of the divisor), as in Halide; float Div is IEEE.
//  - Index arithmetic is int64 (kIndexType). Vector expressions have lanes > 1;
//    a Ramp(base, stride, n) is <base, base + stride, ..., base + (n-1) stride>.
//  - Comparisons and logic produce bool with the lanes of their operands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "compiler/ir/object.h"

namespace tessera {

/// The type of loop variables and flat buffer indices.
inline constexpr DType kIndexType = DType::i64();

// clang-format off
#define TESSERA_EXPR_KINDS(X) \
  X(IntImm)                   \
  X(FloatImm)                 \
  X(Var)                      \
  X(Add)                      \
  X(Sub)                      \
  X(Mul)                      \
  X(Div)                      \
  X(Mod)                      \
  X(Min)                      \
  X(Max)                      \
  X(EQ)                       \
  X(NE)                       \
  X(LT)                       \
  X(LE)                       \
  X(GT)                       \
  X(GE)                       \
  X(And)                      \
  X(Or)                       \
  X(Not)                      \
  X(Select)                   \
  X(Cast)                     \
  X(Call)                     \
  X(Load)                     \
  X(Ramp)                     \
  X(Broadcast)                \
  X(TensorRead)               \
  X(Reduce)
// clang-format on

enum class ExprKind : uint8_t {
#define TESSERA_X(name) k##name,
  TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
};

/// "Add", "Var", ... for messages.
const char* expr_kind_name(ExprKind kind);

/// Every expression node: its kind and its type.
struct ExprNode : Object {
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
  const ExprKind kind;
  const DType dtype;
};

/// A handle to an expression. Converts from integer and float literals
/// (int64 and float32 constants).
class Expr : public Ref<const ExprNode> {
 public:
  Expr() = default;
  explicit Expr(Ref<const ExprNode> r) : Ref<const ExprNode>(std::move(r)) {}
  Expr(int value);      // NOLINT: int64 constant
  Expr(int64_t value);  // NOLINT: int64 constant
  Expr(float value);    // NOLINT: float32 constant
  Expr(double value);   // NOLINT: float32 constant

  DType dtype() const { return get()->dtype; }
  ExprKind kind() const { return get()->kind; }
  /// The node as T when its kind is T's, else nullptr.
  template <typename T>
  const T* as() const {
    return (get() && get()->kind == T::kKind) ? static_cast<const T*>(get()) : nullptr;
  }
};

// ---------------------------------------------------------------------------
// Leaves

struct IntImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
};
/// An integer or bool constant of scalar type `t`.
Expr make_int(int64_t value, DType t = kIndexType);
Expr make_bool(bool value);

struct FloatImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
};
Expr make_float(double value, DType t = DType::f32());
/// A constant `value` of type `t` (integer or float; vector types broadcast).
Expr make_const(DType t, double value);

/// A variable: identified by its node, never by its name (names only print).
struct VarNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(DType t, std::string n) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

/// Handle to a VarNode; usable as a map key (by identity).
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DType t = kIndexType);
  explicit Var(const VarNode* node) : Expr(Ref<const ExprNode>(const_cast<VarNode*>(node))) {}
  const VarNode* node() const { return static_cast<const VarNode*>(get()); }
  const std::string& name() const { return node()->name; }
};

// ---------------------------------------------------------------------------
// Arithmetic, comparison and logic

/// Add..Or: two operands of the same type (comparisons yield bool lanes).
struct BinaryNode final : ExprNode {
  BinaryNode(ExprKind k, DType t, Expr x, Expr y) : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  const Expr a, b;
};
/// True for Add..Or.
bool is_binary(ExprKind kind);
bool is_comparison(ExprKind kind);
/// Builds a binary node; operands must have equal types (checked).
Expr make_binary(ExprKind kind, Expr a, Expr b);

struct NotNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kNot;
  NotNode(DType t, Expr x) : ExprNode(kKind, t), a(std::move(x)) {}
  const Expr a;
};
Expr make_not(Expr a);

/// cond ? t : f, evaluated lane-wise; both branches may be evaluated.
struct SelectNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  SelectNode(DType t, Expr c, Expr x, Expr y)
      : ExprNode(kKind, t), cond(std::move(c)), true_value(std::move(x)), false_value(std::move(y)) {}
  const Expr cond, true_value, false_value;
};
Expr make_select(Expr cond, Expr true_value, Expr false_value);

/// Conversion to `dtype` (float→int truncates toward zero).
struct CastNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  CastNode(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
};
Expr make_cast(DType t, Expr value);

/// Pure math intrinsics, listed once: X(enum name, printed name). All take
/// and return floats (kAbs also integers); kPow takes two arguments, the rest
/// one. kRound rounds half to even; the trigonometric and hyperbolic functions
/// and their inverses are libm's (NaN outside their domain).
/// kDotU8S8(a, b) takes and returns int32: a and b each hold four 8-bit
/// values (lowest byte first), a's unsigned and b's signed, and the result is
/// the sum of their four products (at most 4 * 255 * 128 in magnitude: it
/// never wraps). An int32 add of it maps to one dot-product instruction per
/// vector where the target has one (x86 VNNI's vpdpbusd).
/// kDotBf16(a, b) takes int32 and returns float32: a and b each hold two
/// bfloat16 values (the lower half first), and the result is the sum of
/// their two products (exact in float32) rounded once to float32. A float32
/// add of it maps to one dot-product instruction per vector where the target
/// has one (x86 AVX512-BF16's vdpbf16ps, AArch64's BFDOT), which flush
/// subnormal inputs and results to zero.
/// kPackBf16(lo, hi) takes two float32 or two bfloat16 values and returns
/// the int32 word holding them as bfloat16, lo in the lower half (rounded
/// to nearest even; a NaN stays a quiet NaN): the operand kDotBf16 takes.
/// Two loads of neighbouring bfloat16 elements become one load of the word.
// clang-format off
#define TESSERA_CALL_OPS(X)                                                                        \
  X(kExp, "exp") X(kLog, "log") X(kSqrt, "sqrt") X(kTanh, "tanh") X(kErf, "erf") X(kAbs, "abs")   \
  X(kFloor, "floor") X(kCeil, "ceil") X(kRound, "round") X(kPow, "pow") X(kSigmoid, "sigmoid")     \
  X(kSin, "sin") X(kCos, "cos") X(kTan, "tan") X(kAsin, "asin") X(kAcos, "acos") X(kAtan, "atan") \
  X(kSinh, "sinh") X(kCosh, "cosh") X(kAsinh, "asinh") X(kAcosh, "acosh") X(kAtanh, "atanh")       \
  X(kDotU8S8, "dot_u8s8") X(kDotBf16, "dot_bf16") X(kPackBf16, "pack_bf16")
// clang-format on

enum class CallOp : uint8_t {
#define TESSERA_CALL_OP_ENUM(e, s) e,
  TESSERA_CALL_OPS(TESSERA_CALL_OP_ENUM)
#undef TESSERA_CALL_OP_ENUM
};
/// Whether `op` is a dot product of packed int32 words (kDotU8S8, kDotBf16).
inline bool is_dot_product(CallOp op) {
  return op == CallOp::kDotU8S8 || op == CallOp::kDotBf16;
}

/// The printed name of a call, e.g. "exp".
const char* call_op_name(CallOp op);

struct CallNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  CallNode(DType t, CallOp o, std::vector<Expr> a) : ExprNode(kKind, t), op(o), args(std::move(a)) {}
  const CallOp op;
  const std::vector<Expr> args;
};
Expr make_call(CallOp op, std::vector<Expr> args);

// ---------------------------------------------------------------------------
// Memory

/// Where a buffer lives: a kernel argument, or storage the kernel allocates
/// (kLocal: small, on the stack/in registers; kWorkspace: from the runtime).
enum class MemoryScope : uint8_t { kGlobal, kLocal, kWorkspace };

/// A flat region of memory of `dtype` elements; `shape` is its logical extent
/// (row-major) and gives its size.
struct BufferNode final : Object {
  BufferNode(std::string n, DType t, std::vector<int64_t> s, MemoryScope sc)
      : name(std::move(n)), dtype(t), shape(std::move(s)), scope(sc) {}
  const std::string name;
  const DType dtype;
  const std::vector<int64_t> shape;
  const MemoryScope scope;
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};
using Buffer = Ref<const BufferNode>;
Buffer make_buffer(std::string name, DType dtype, std::vector<int64_t> shape, MemoryScope scope = MemoryScope::kGlobal);

/// buffer[index]: a vector load when index is a vector.
/// buffer[index], or, with a predicate (bool, as many lanes as the index),
/// only the lanes where it holds: the others read nothing and are zero.
struct LoadNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kLoad;
  LoadNode(DType t, Buffer b, Expr i, Expr p = Expr())
      : ExprNode(kKind, t), buffer(std::move(b)), index(std::move(i)), predicate(std::move(p)) {}
  const Buffer buffer;
  const Expr index;
  const Expr predicate;  ///< undefined: every lane
};
Expr make_load(Buffer buffer, Expr index, Expr predicate = Expr());

struct RampNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kRamp;
  RampNode(DType t, Expr b, Expr s, int n) : ExprNode(kKind, t), base(std::move(b)), stride(std::move(s)), lanes(n) {}
  const Expr base, stride;
  const int lanes;
};
Expr make_ramp(Expr base, Expr stride, int lanes);

struct BroadcastNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBroadcast;
  BroadcastNode(DType t, Expr v, int n) : ExprNode(kKind, t), value(std::move(v)), lanes(n) {}
  const Expr value;
  const int lanes;
};
Expr make_broadcast(Expr value, int lanes);

// ---------------------------------------------------------------------------
// Tensor expressions (before lowering)

/// A tensor's identity: the output of an operation (placeholder or compute).
/// The operation itself is owned by compiler/te and held here opaquely.
struct TensorNode final : Object {
  TensorNode(std::string n, std::vector<int64_t> s, DType t, Ref<const Object> o)
      : name(std::move(n)), shape(std::move(s)), dtype(t), op(std::move(o)) {}
  const std::string name;
  const std::vector<int64_t> shape;
  const DType dtype;
  const Ref<const Object> op;
  int ndim() const { return static_cast<int>(shape.size()); }
};
using Tensor = Ref<const TensorNode>;

/// tensor[indices...], one index per dimension.
struct TensorReadNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kTensorRead;
  TensorReadNode(DType t, Tensor x, std::vector<Expr> i)
      : ExprNode(kKind, t), tensor(std::move(x)), indices(std::move(i)) {}
  const Tensor tensor;
  const std::vector<Expr> indices;
};
Expr make_tensor_read(Tensor tensor, std::vector<Expr> indices);

/// An iteration axis: var ranges over [0, extent).
enum class IterKind : uint8_t { kSpatial, kReduce };
struct IterVarNode final : Object {
  IterVarNode(Var v, int64_t e, IterKind k) : var(std::move(v)), extent(e), kind(k) {}
  const Var var;
  const int64_t extent;
  const IterKind kind;
};
using IterVar = Ref<const IterVarNode>;
IterVar make_iter_var(std::string name, int64_t extent, IterKind kind);

/// How a reduction combines: sum, product, max or min.
enum class ReduceOp : uint8_t { kSum, kProd, kMax, kMin };
const char* reduce_op_name(ReduceOp op);
/// The identity of `op` for `t` (0, 1, lowest, highest).
Expr reduce_identity(ReduceOp op, DType t);
/// combine(acc, value) for `op`.
Expr reduce_combine(ReduceOp op, Expr acc, Expr value);

/// combiner over `axes` of `source`; only as the whole body of a compute.
struct ReduceNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kReduce;
  ReduceNode(DType t, ReduceOp o, Expr s, std::vector<IterVar> a)
      : ExprNode(kKind, t), op(o), source(std::move(s)), axes(std::move(a)) {}
  const ReduceOp op;
  const Expr source;
  const std::vector<IterVar> axes;
};
Expr make_reduce(ReduceOp op, Expr source, std::vector<IterVar> axes);

// ---------------------------------------------------------------------------
// Small queries

/// The value of an integer constant (also of a Broadcast of one), if it is one.
bool is_const_int(const Expr& e, int64_t* value = nullptr);
bool is_const_float(const Expr& e, double* value = nullptr);
/// True when e is the integer/bool constant `v`.
bool is_const_value(const Expr& e, int64_t v);

}  // namespace tessera
