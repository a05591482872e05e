#include "compiler/codegen/interpreter.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "base/half.h"
#include "base/int_div.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/scalar_semantics.h"

namespace tessera {
namespace {

// ---------------------------------------------------------------------------
// Scalar representation: every lane is a double (float types) or an int64
// (integer and bool types), already rounded/wrapped to its IR type.

union Lane {
  double f;
  int64_t i;
};

// The lanes of one value. Scalars live inline so the common case allocates
// nothing; at(l) of a scalar is the scalar (implicit broadcast).
class Value {
 public:
  Value() { one_.i = 0; }
  explicit Value(DType t) : type_(t) {
    one_.i = 0;
    if (t.lanes > 1) many_.assign(t.lanes, one_);
  }
  DType type() const { return type_; }
  int lanes() const { return type_.lanes; }
  Lane& operator[](int l) { return type_.lanes > 1 ? many_[l] : one_; }
  const Lane& at(int l) const { return type_.lanes > 1 ? many_[l] : one_; }

 private:
  DType type_;
  Lane one_;
  std::vector<Lane> many_;
};

// Which lanes of a vector expression are live. bits == nullptr: all of them.
struct Mask {
  const uint8_t* bits = nullptr;
  int lanes = 0;
  bool active(int l) const { return bits == nullptr || bits[l] != 0; }
  bool any() const {
    for (int l = 0; l < lanes; ++l)
      if (bits[l]) return true;
    return bits == nullptr;
  }
};

// --- rounding to IR types ------------------------------------------------------

double round_float(DType t, double v) {
  if (t.code == TypeCode::kBFloat) return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
  if (t.bits == 32) return static_cast<float>(v);
  if (t.bits == 16) return half_to_float(float_to_half(static_cast<float>(v)));
  return v;
}

bool is_supported(DType t) {
  const DType e = t.element_of();
  if (e.is_bool()) return true;
  switch (e.code) {
    case TypeCode::kFloat: return e.bits == 16 || e.bits == 32 || e.bits == 64;
    case TypeCode::kBFloat: return e.bits == 16;
    case TypeCode::kInt:
    case TypeCode::kUInt: return e.bits == 8 || e.bits == 16 || e.bits == 32 || e.bits == 64;
    case TypeCode::kHandle: return false;
  }
  return false;
}

Lane read_element(DType t, const uint8_t* p) {
  Lane out;
  out.i = 0;
  if (t.is_bool()) {
    out.i = *p != 0;
    return out;
  }
  auto load = [p](auto sample) {
    decltype(sample) v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t.code) {
    case TypeCode::kFloat:
      if (t.bits == 32)
        out.f = load(float{});
      else if (t.bits == 64)
        out.f = load(double{});
      else
        out.f = half_to_float(load(uint16_t{}));
      break;
    case TypeCode::kBFloat: out.f = bfloat16_to_float(load(uint16_t{})); break;
    case TypeCode::kInt:
      if (t.bits == 8)
        out.i = load(int8_t{});
      else if (t.bits == 16)
        out.i = load(int16_t{});
      else if (t.bits == 32)
        out.i = load(int32_t{});
      else
        out.i = load(int64_t{});
      break;
    case TypeCode::kUInt:
      if (t.bits == 8)
        out.i = load(uint8_t{});
      else if (t.bits == 16)
        out.i = load(uint16_t{});
      else if (t.bits == 32)
        out.i = load(uint32_t{});
      else
        out.i = static_cast<int64_t>(load(uint64_t{}));
      break;
    case TypeCode::kHandle: break;
  }
  return out;
}

void write_element(DType t, uint8_t* p, Lane v) {
  auto store = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  if (t.is_bool()) {
    *p = v.i != 0;
    return;
  }
  switch (t.code) {
    case TypeCode::kFloat:
      if (t.bits == 32)
        store(static_cast<float>(v.f));
      else if (t.bits == 64)
        store(v.f);
      else
        store(float_to_half(static_cast<float>(v.f)));
      break;
    case TypeCode::kBFloat: store(float_to_bfloat16(static_cast<float>(v.f))); break;
    case TypeCode::kInt:
    case TypeCode::kUInt:
      if (t.bits == 8)
        store(static_cast<uint8_t>(v.i));
      else if (t.bits == 16)
        store(static_cast<uint16_t>(v.i));
      else if (t.bits == 32)
        store(static_cast<uint32_t>(v.i));
      else
        store(static_cast<uint64_t>(v.i));
      break;
    case TypeCode::kHandle: break;
  }
}

// --- lane-wise operations ----------------------------------------------------

Lane cast_lane(DType from, DType to, Lane v) {
  Lane out;
  if (to.is_float()) {
    double x = from.is_float()                       ? v.f
               : (from.is_uint() && from.bits == 64) ? static_cast<double>(static_cast<uint64_t>(v.i))
                                                     : static_cast<double>(v.i);
    out.f = round_float(to, x);
    return out;
  }
  if (!from.is_float()) {
    out.i = wrap_int(to, v.i);
    return out;
  }
  if (to.is_bool()) {
    out.i = v.f != 0.0;
    return out;
  }
  // Float to integer: truncate toward zero, saturating at the type's range.
  double x = std::trunc(v.f);
  if (std::isnan(x)) {
    out.i = 0;
    return out;
  }
  const double lo = to.is_uint() ? 0.0 : -std::ldexp(1.0, to.bits - 1);
  const double hi = to.is_uint() ? std::ldexp(1.0, to.bits) - 1 : std::ldexp(1.0, to.bits - 1) - 1;
  if (x <= lo)
    out.i = to.is_uint() ? 0 : std::numeric_limits<int64_t>::min() >> (64 - to.bits);
  else if (x >= hi)
    out.i = to.is_uint() && to.bits == 64 ? -1 : static_cast<int64_t>(hi);
  else
    out.i = to.is_uint() && to.bits == 64 ? static_cast<int64_t>(static_cast<uint64_t>(x)) : static_cast<int64_t>(x);
  out.i = wrap_int(to, out.i);
  return out;
}

// Compares a and b of operand type t: -1, 0, 1 (floats: NaN compares unordered,
// reported through `unordered`).
int compare_lane(DType t, Lane a, Lane b, bool* unordered) {
  *unordered = false;
  if (t.is_float()) {
    if (std::isnan(a.f) || std::isnan(b.f)) {
      *unordered = true;
      return 0;
    }
    return a.f < b.f ? -1 : (a.f > b.f ? 1 : 0);
  }
  if (t.is_uint()) {
    uint64_t x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
}

// ---------------------------------------------------------------------------

struct Binding {
  const BufferNode* buffer;
  uint8_t* data;
  int64_t elements;
  int bytes;  // per element
};

class Interpreter {
 public:
  Interpreter(const PrimFunc& f, const InterpretOptions& options) : func_(f), options_(options) {}

  Status run(const std::vector<void*>& args);

 private:
  void fail(ErrorCode code, const std::string& what) {
    if (error_.is_ok()) error_ = Status(code, "kernel " + func_.name + ": " + what);
  }
  bool failed() const { return !error_.is_ok(); }

  Value eval(const Expr& e, Mask mask = {});
  Value eval_node(const Expr& e, Mask mask);
  Value eval_binary(const BinaryNode* op, Mask mask);
  Value eval_select(const SelectNode* op, Mask mask);
  Value eval_load(const LoadNode* op, Mask mask);
  Lane binary_lane(ExprKind kind, DType t, Lane a, Lane b);
  void exec(const Stmt& s);
  void exec_store(const StoreNode* op);
  void exec_for(const ForNode* op);
  void exec_allocate(const AllocateNode* op);
  const Binding* find_buffer(const BufferNode* b);
  bool check_index(const Binding& b, int64_t index, const char* access);

  const PrimFunc& func_;
  const InterpretOptions options_;
  Status error_;
  std::vector<std::pair<const VarNode*, int64_t>> env_;  // innermost binding last
  std::vector<Binding> buffers_;                         // innermost binding last
};

Status Interpreter::run(const std::vector<void*>& args) {
  if (args.size() != func_.params.size())
    return Status(ErrorCode::kInvalidArgument, "kernel " + func_.name + " takes " +
                                                   std::to_string(func_.params.size()) + " buffers, got " +
                                                   std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& b = func_.params[i];
    if (args[i] == nullptr)
      return Status(ErrorCode::kInvalidArgument, "kernel " + func_.name + ": buffer " + b->name + " is null");
    if (!is_supported(b->dtype))
      return Status(ErrorCode::kInvalidArgument,
                    "kernel " + func_.name + ": buffer " + b->name + " has unsupported type " + b->dtype.to_string());
    buffers_.push_back({b.get(), static_cast<uint8_t*>(args[i]), b->num_elements(), b->dtype.storage_bytes()});
  }
  if (func_.body.defined()) exec(func_.body);
  return error_;
}

const Binding* Interpreter::find_buffer(const BufferNode* b) {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it)
    if (it->buffer == b) return &*it;
  fail(ErrorCode::kInternal, "buffer " + b->name + " is neither a parameter nor allocated");
  return nullptr;
}

bool Interpreter::check_index(const Binding& b, int64_t index, const char* access) {
  if (index >= 0 && index < b.elements) return true;
  fail(ErrorCode::kRuntimeError, std::string("out-of-bounds ") + access + " of buffer " + b.buffer->name +
                                     " at index " + std::to_string(index) + " (it has " + std::to_string(b.elements) +
                                     " elements)");
  return false;
}

Value Interpreter::eval(const Expr& e, Mask mask) {
  if (mask.bits != nullptr) {
    // A scalar under a vector mask runs if any lane is live; nothing runs when
    // every lane is dead.
    if (!mask.any()) return Value(e.dtype());
    if (e.dtype().lanes == 1) mask = Mask{};
  }
  return eval_node(e, mask);
}

Value Interpreter::eval_node(const Expr& e, Mask mask) {
  const DType t = e.dtype();
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      Value v(t);
      v[0].i = wrap_int(t, e.as<IntImmNode>()->value);
      return v;
    }
    case ExprKind::kFloatImm: {
      Value v(t);
      v[0].f = round_float(t, e.as<FloatImmNode>()->value);
      return v;
    }
    case ExprKind::kVar: {
      const VarNode* var = e.as<VarNode>();
      Value v(t);
      for (auto it = env_.rbegin(); it != env_.rend(); ++it) {
        if (it->first == var) {
          v[0].i = it->second;
          return v;
        }
      }
      fail(ErrorCode::kInternal, "variable " + var->name + " is not bound by an enclosing loop");
      return v;
    }
    case ExprKind::kAdd:
    case ExprKind::kSub:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kMod:
    case ExprKind::kMin:
    case ExprKind::kMax:
    case ExprKind::kEQ:
    case ExprKind::kNE:
    case ExprKind::kLT:
    case ExprKind::kLE:
    case ExprKind::kGT:
    case ExprKind::kGE:
    case ExprKind::kAnd:
    case ExprKind::kOr: return eval_binary(static_cast<const BinaryNode*>(e.get()), mask);
    case ExprKind::kNot: {
      Value a = eval(e.as<NotNode>()->a, mask), v(t);
      for (int l = 0; l < v.lanes(); ++l) v[l].i = a.at(l).i == 0;
      return v;
    }
    case ExprKind::kSelect: return eval_select(e.as<SelectNode>(), mask);
    case ExprKind::kCast: {
      const auto* op = e.as<CastNode>();
      Value a = eval(op->value, mask), v(t);
      for (int l = 0; l < v.lanes(); ++l)
        if (mask.active(l)) v[l] = cast_lane(op->value.dtype(), t, a.at(l));
      return v;
    }
    case ExprKind::kCall: {
      const auto* op = e.as<CallNode>();
      std::vector<Value> args;
      for (const Expr& a : op->args) args.push_back(eval(a, mask));
      Value v(t);
      for (int l = 0; l < v.lanes(); ++l) {
        if (!mask.active(l)) continue;
        if (op->op == CallOp::kDotU8S8) {
          v[l].i = wrap_int(t, dot_u8s8_value(args[0].at(l).i, args[1].at(l).i));
          continue;
        }
        if (op->op == CallOp::kDotBf16) {
          v[l].f = dot_bf16_value(args[0].at(l).i, args[1].at(l).i);
          continue;
        }
        if (op->op == CallOp::kPackBf16) {
          v[l].i = pack_bf16_value(args[0].at(l).f, args[1].at(l).f);
          continue;
        }
        if (!t.is_float()) {  // abs of an integer
          int64_t x = args[0].at(l).i;
          v[l].i = wrap_int(t, x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x);
          continue;
        }
        double y = args.size() > 1 ? args[1].at(l).f : 0.0;
        v[l].f = round_float(t, call_value(op->op, args[0].at(l).f, y));
      }
      return v;
    }
    case ExprKind::kLoad: return eval_load(e.as<LoadNode>(), mask);
    case ExprKind::kRamp: {
      const auto* op = e.as<RampNode>();
      Value base = eval(op->base), stride = eval(op->stride), v(t);
      for (int l = 0; l < v.lanes(); ++l) {
        if (t.is_float())
          v[l].f = round_float(t, base.at(0).f + l * stride.at(0).f);
        else
          v[l].i = wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(base.at(0).i) +
                                                    static_cast<uint64_t>(l) * static_cast<uint64_t>(stride.at(0).i)));
      }
      return v;
    }
    case ExprKind::kBroadcast: {
      Value x = eval(e.as<BroadcastNode>()->value), v(t);
      for (int l = 0; l < v.lanes(); ++l) v[l] = x.at(0);
      return v;
    }
    case ExprKind::kTensorRead:
    case ExprKind::kReduce:
      fail(ErrorCode::kInternal,
           std::string(expr_kind_name(e.kind())) +
               " left in lowered code (lowering must turn it into loads and loops): " + to_string(e));
      return Value(t);
  }
  return Value(t);
}

Lane Interpreter::binary_lane(ExprKind kind, DType t, Lane a, Lane b) {
  Lane r;
  r.i = 0;
  if (is_comparison(kind)) {
    bool unordered;
    int c = compare_lane(t, a, b, &unordered);
    switch (kind) {
      case ExprKind::kEQ: r.i = !unordered && c == 0; break;
      case ExprKind::kNE: r.i = unordered || c != 0; break;
      case ExprKind::kLT: r.i = !unordered && c < 0; break;
      case ExprKind::kLE: r.i = !unordered && c <= 0; break;
      case ExprKind::kGT: r.i = !unordered && c > 0; break;
      case ExprKind::kGE: r.i = !unordered && c >= 0; break;
      default: break;
    }
    return r;
  }
  if (t.is_float()) {
    double x = a.f, y = b.f, z = 0;
    switch (kind) {
      case ExprKind::kAdd: z = x + y; break;
      case ExprKind::kSub: z = x - y; break;
      case ExprKind::kMul: z = x * y; break;
      case ExprKind::kDiv: z = x / y; break;
      case ExprKind::kMod: z = x - std::floor(x / y) * y; break;
      case ExprKind::kMin: z = x < y ? x : y; break;  // as compare-and-select: NaN in b wins
      case ExprKind::kMax: z = x > y ? x : y; break;
      default: fail(ErrorCode::kInternal, std::string(expr_kind_name(kind)) + " on float operands"); break;
    }
    r.f = round_float(t, z);
    return r;
  }
  // Integers: two's complement arithmetic wrapped to the type's width.
  const uint64_t ux = static_cast<uint64_t>(a.i), uy = static_cast<uint64_t>(b.i);
  int64_t z = 0;
  switch (kind) {
    case ExprKind::kAdd: z = static_cast<int64_t>(ux + uy); break;
    case ExprKind::kSub: z = static_cast<int64_t>(ux - uy); break;
    case ExprKind::kMul: z = static_cast<int64_t>(ux * uy); break;
    case ExprKind::kDiv:
    case ExprKind::kMod:
      if (b.i == 0) {
        fail(ErrorCode::kRuntimeError, std::string("integer ") + (kind == ExprKind::kDiv ? "division" : "modulo") +
                                           " by zero (" + std::to_string(a.i) + " " +
                                           (kind == ExprKind::kDiv ? "/" : "%") + " 0)");
        break;
      }
      if (t.is_uint())
        z = static_cast<int64_t>(kind == ExprKind::kDiv ? ux / uy : ux % uy);
      else
        z = kind == ExprKind::kDiv ? floordiv(a.i, b.i) : floormod(a.i, b.i);
      break;
    case ExprKind::kMin:
    case ExprKind::kMax: {
      bool unordered;
      bool a_less = compare_lane(t, a, b, &unordered) < 0;
      z = (kind == ExprKind::kMin) == a_less ? a.i : b.i;
      break;
    }
    case ExprKind::kAnd: z = a.i != 0 && b.i != 0; break;
    case ExprKind::kOr: z = a.i != 0 || b.i != 0; break;
    default: break;
  }
  r.i = wrap_int(t, z);
  return r;
}

Value Interpreter::eval_binary(const BinaryNode* op, Mask mask) {
  Value a = eval(op->a, mask), b = eval(op->b, mask), v(op->dtype);
  const DType operand = op->a.dtype();
  for (int l = 0; l < v.lanes(); ++l)
    if (mask.active(l)) v[l] = binary_lane(op->kind, operand, a.at(l), b.at(l));
  return v;
}

Value Interpreter::eval_select(const SelectNode* op, Mask mask) {
  Value cond = eval(op->cond, mask);
  if (cond.lanes() == 1) return eval(cond.at(0).i ? op->true_value : op->false_value, mask);
  // Vector condition: each branch runs only on the lanes that take it.
  const int lanes = cond.lanes();
  std::vector<uint8_t> take_true(lanes), take_false(lanes);
  for (int l = 0; l < lanes; ++l) {
    take_true[l] = mask.active(l) && cond.at(l).i != 0;
    take_false[l] = mask.active(l) && cond.at(l).i == 0;
  }
  Value t = eval(op->true_value, Mask{take_true.data(), lanes});
  Value f = eval(op->false_value, Mask{take_false.data(), lanes});
  Value v(op->dtype);
  for (int l = 0; l < lanes; ++l) v[l] = take_true[l] ? t.at(l) : f.at(l);
  return v;
}

Value Interpreter::eval_load(const LoadNode* op, Mask mask) {
  Value index = eval(op->index, mask), v(op->dtype);
  Value pred = op->predicate.defined() ? eval(op->predicate, mask) : Value();
  const Binding* b = find_buffer(op->buffer.get());
  if (b == nullptr) return v;
  const DType elem = op->buffer->dtype;
  for (int l = 0; l < v.lanes(); ++l) {
    if (!mask.active(l) || (op->predicate.defined() && pred.at(l).i == 0)) continue;
    const int64_t i = index.at(l).i;
    if (!check_index(*b, i, "load")) return v;
    v[l] = read_element(elem, b->data + i * b->bytes);
  }
  return v;
}

// ---------------------------------------------------------------------------
// Statements

void Interpreter::exec(const Stmt& s) {
  if (failed()) return;
  switch (s.kind()) {
    case StmtKind::kStore: exec_store(s.as<StoreNode>()); return;
    case StmtKind::kFor: exec_for(s.as<ForNode>()); return;
    case StmtKind::kSeq:
      for (const Stmt& x : s.as<SeqNode>()->stmts) {
        exec(x);
        if (failed()) return;
      }
      return;
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<IfThenElseNode>();
      Value cond = eval(op->cond);
      if (failed()) return;
      if (cond.at(0).i != 0)
        exec(op->then_case);
      else if (op->else_case.defined())
        exec(op->else_case);
      return;
    }
    case StmtKind::kAllocate: exec_allocate(s.as<AllocateNode>()); return;
    case StmtKind::kAttr: exec(s.as<AttrNode>()->body); return;
  }
}

void Interpreter::exec_store(const StoreNode* op) {
  Value pred = op->predicate.defined() ? eval(op->predicate) : Value();
  std::vector<uint8_t> active(static_cast<size_t>(op->index.dtype().lanes), 1);
  if (op->predicate.defined())
    for (int l = 0; l < pred.lanes(); ++l) active[static_cast<size_t>(l)] = pred.at(l).i != 0;
  // Inactive lanes are not evaluated: their loads may lie outside a buffer.
  const Mask mask{active.data(), static_cast<int>(active.size())};
  Value value = eval(op->value, mask), index = eval(op->index, mask);
  if (failed()) return;
  const Binding* b = find_buffer(op->buffer.get());
  if (b == nullptr) return;
  const DType elem = op->buffer->dtype;
  for (int l = 0; l < index.lanes(); ++l) {
    if (!active[static_cast<size_t>(l)]) continue;
    const int64_t i = index.at(l).i;
    if (!check_index(*b, i, "store")) return;
    write_element(elem, b->data + i * b->bytes, value.at(l));
  }
}

void Interpreter::exec_for(const ForNode* op) {
  Value lo = eval(op->min), extent = eval(op->extent);
  if (failed()) return;
  const size_t slot = env_.size();
  env_.emplace_back(op->var.node(), 0);
  const int64_t n = extent.at(0).i;
  const bool reverse = options_.reverse_parallel_loops && op->loop_kind == LoopKind::kParallel;
  for (int64_t i = 0; i < n; ++i) {
    env_[slot].second = lo.at(0).i + (reverse ? n - 1 - i : i);
    exec(op->body);
    if (failed()) break;
  }
  env_.pop_back();
}

void Interpreter::exec_allocate(const AllocateNode* op) {
  const Buffer& buffer = op->buffer;
  if (!is_supported(buffer->dtype)) {
    fail(ErrorCode::kInternal, "allocation " + buffer->name + " has unsupported type " + buffer->dtype.to_string());
    return;
  }
  const int bytes = buffer->dtype.storage_bytes();
  std::vector<uint8_t> storage(static_cast<size_t>(buffer->num_elements()) * bytes, 0);
  buffers_.push_back({buffer.get(), storage.data(), buffer->num_elements(), bytes});
  exec(op->body);
  buffers_.pop_back();
}

}  // namespace

Status interpret(const PrimFunc& f, const std::vector<void*>& args, const InterpretOptions& options) {
  return Interpreter(f, options).run(args);
}

}  // namespace tessera
