#include "compiler/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "compiler/ir/functor.h"

namespace tessera {
namespace {

const char* binary_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::kAdd: return " + ";
    case ExprKind::kSub: return " - ";
    case ExprKind::kMul: return "*";
    case ExprKind::kDiv: return "/";
    case ExprKind::kMod: return " % ";
    case ExprKind::kEQ: return " == ";
    case ExprKind::kNE: return " != ";
    case ExprKind::kLT: return " < ";
    case ExprKind::kLE: return " <= ";
    case ExprKind::kGT: return " > ";
    case ExprKind::kGE: return " >= ";
    case ExprKind::kAnd: return " && ";
    case ExprKind::kOr: return " || ";
    default: return nullptr;
  }
}

// %.9g is exact for float32 (and narrower) constants and is what workload
// keys hash; a float64 constant gets the digits it needs to read back exactly
// unless the text is the canonical one.
std::string format_float(double v, bool exact) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  if (exact && !std::isnan(v) && std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_keyword(const std::string& s) {
  static const char* const kKeywords[] = {"for",   "parallel", "vectorized", "unrolled", "if",   "else",
                                          "alloc", "attr",     "in",         "func",     "true", "false"};
  for (const char* k : kKeywords)
    if (s == k) return true;
  // Spellings of float constants: inf, nan with a type suffix.
  for (const char* special : {"inf", "nan"}) {
    if (s.rfind(special, 0) != 0) continue;
    const std::string suffix = s.substr(3);
    if (suffix.empty() || suffix == "f" || suffix.rfind("float", 0) == 0 || suffix.rfind("bfloat", 0) == 0) return true;
  }
  return false;
}

// A name the parser reads as one identifier and not as a keyword.
std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9') || s[0] == '.') s = "_" + s;
  if (is_keyword(s)) s += "_";
  return s;
}

// Names the variables, buffers and tensors a statement uses without binding
// them, in order of first appearance, before anything bound is named.
class FreeObjectNamer final : public IRVisitor {
 public:
  explicit FreeObjectNamer(IRPrinter& p) : p_(p) {}

 protected:
  using IRVisitor::visit;
  void visit(const VarNode* op) override {
    if (!bound_.count(op)) p_.name_of(op);
  }
  void visit(const LoadNode* op) override {
    if (!bound_.count(op->buffer.get())) p_.name_of(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const TensorReadNode* op) override {
    p_.name_of(op->tensor.get());
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    if (!bound_.count(op->buffer.get())) p_.name_of(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const ForNode* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    bound_scope(op->var.get(), op->body);
  }
  void visit(const AllocateNode* op) override { bound_scope(op->buffer.get(), op->body); }

 private:
  void bound_scope(const void* node, const Stmt& body) {
    ++bound_[node];
    visit_stmt(body);
    if (--bound_[node] == 0) bound_.erase(node);
  }
  IRPrinter& p_;
  std::unordered_map<const void*, int> bound_;
};

}  // namespace

std::string buffer_type_string(const BufferNode* b) {
  return b->dtype.to_string() + shape_string(b->shape);
}

std::string IRPrinter::fresh(const std::string& name) const {
  auto used = [&](const std::string& n) { return taken_.count(n) || in_scope_.count(n); };
  if (!used(name)) return name;
  for (int i = 1;; ++i) {
    std::string candidate = name + "_" + std::to_string(i);
    if (!used(candidate)) return candidate;
  }
}

std::string IRPrinter::global_name(const void* node, const std::string& name, char prefix, int& counter) {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string n = canonical_ ? prefix + std::to_string(counter++) : fresh(sanitize(name));
  names_.emplace(node, n);
  taken_.insert(n);
  return n;
}

std::string IRPrinter::name_of(const VarNode* v) {
  const bool first = !names_.count(v);
  std::string n = global_name(v, v->name, 'v', next_var_);
  if (first) free_.vars.emplace_back(n, Var(v));
  return n;
}
std::string IRPrinter::name_of(const TensorNode* t) {
  const bool first = !names_.count(t);
  std::string n = global_name(t, t->name, 't', next_tensor_);
  if (first) free_.tensors.emplace_back(n, Tensor(t));
  return n;
}
std::string IRPrinter::name_of(const BufferNode* b) {
  const bool first = !names_.count(b);
  std::string n = global_name(b, b->name, 'b', next_buffer_);
  if (first) free_.buffers.emplace_back(n, Buffer(b));
  return n;
}

void IRPrinter::bind(const void* node, const std::string& name) {
  std::string n = canonical_ ? name : fresh(sanitize(name));
  bound_[node].push_back(n);
  ++in_scope_[n];
}

void IRPrinter::unbind(const void* node) {
  auto it = bound_.find(node);
  const std::string n = it->second.back();
  it->second.pop_back();
  if (it->second.empty()) bound_.erase(it);
  if (--in_scope_[n] == 0) in_scope_.erase(n);
}

std::string IRPrinter::print(const Expr& e) {
  std::string out;
  expr(e, out);
  return out;
}

std::string IRPrinter::print(const Stmt& s) {
  std::string out;
  if (!canonical_) name_free_objects(s);
  stmt(s, 0, out, /*braced_scope=*/false);
  return out;
}

void IRPrinter::name_free_objects(const Stmt& s) {
  FreeObjectNamer namer(*this);
  namer(s);
}

void IRPrinter::binary(const Expr& e, std::string& out) {
  const auto* n = static_cast<const BinaryNode*>(e.get());
  if (e.kind() == ExprKind::kMin || e.kind() == ExprKind::kMax) {
    out += e.kind() == ExprKind::kMin ? "min(" : "max(";
    expr(n->a, out);
    out += ", ";
    expr(n->b, out);
    out += ")";
    return;
  }
  out += "(";
  expr(n->a, out);
  out += binary_symbol(e.kind());
  expr(n->b, out);
  out += ")";
}

void IRPrinter::predicate(const Expr& p, std::string& out) {
  if (!p.defined()) return;
  out += " if ";
  expr(p, out);
}

// Loads and tensor reads: a name and its indices.
void IRPrinter::memory(const Expr& e, std::string& out) {
  if (const auto* n = e.as<LoadNode>()) {
    const BufferNode* b = n->buffer.get();
    auto it = bound_.find(b);
    out += (it != bound_.end() ? it->second.back() : name_of(b)) + "[";
    expr(n->index, out);
    predicate(n->predicate, out);
    out += "]";
    return;
  }
  const auto* n = e.as<TensorReadNode>();
  out += name_of(n->tensor.get()) + "[";
  for (size_t i = 0; i < n->indices.size(); ++i) {
    if (i) out += ", ";
    expr(n->indices[i], out);
  }
  out += "]";
}

void IRPrinter::expr(const Expr& e, std::string& out) {
  if (!e.defined()) {
    out += "<undef>";
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* n = e.as<IntImmNode>();
      if (n->dtype.is_bool())
        out += n->value ? "true" : "false";
      else if (n->dtype == kIndexType)
        out += std::to_string(n->value);
      else
        out += n->dtype.to_string() + "(" + std::to_string(n->value) + ")";
      return;
    }
    case ExprKind::kFloatImm: {
      const auto* n = e.as<FloatImmNode>();
      out += format_float(n->value, !canonical_ && n->dtype.bits == 64);
      out += n->dtype == DType::f32() ? std::string("f") : n->dtype.to_string();
      return;
    }
    case ExprKind::kVar: {
      auto it = bound_.find(e.get());
      out += it != bound_.end() ? it->second.back() : name_of(e.as<VarNode>());
      return;
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
    case ExprKind::kOr: return binary(e, out);
    case ExprKind::kNot:
      out += "!";
      expr(e.as<NotNode>()->a, out);
      return;
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      out += "select(";
      expr(n->cond, out);
      out += ", ";
      expr(n->true_value, out);
      out += ", ";
      expr(n->false_value, out);
      out += ")";
      return;
    }
    case ExprKind::kCast: {
      // int32(5) is an int32 constant, so a cast of an int64 constant to an
      // integer type spells its operand's type: int32(int64(5)).
      const Expr& value = e.as<CastNode>()->value;
      out += e.dtype().to_string() + "(";
      if (!canonical_ && e.dtype().is_integral() && value.as<IntImmNode>() && value.dtype() == kIndexType)
        out += kIndexType.to_string() + "(" + std::to_string(value.as<IntImmNode>()->value) + ")";
      else
        expr(value, out);
      out += ")";
      return;
    }
    case ExprKind::kCall: {
      const auto* n = e.as<CallNode>();
      out += call_op_name(n->op);
      out += "(";
      for (size_t i = 0; i < n->args.size(); ++i) {
        if (i) out += ", ";
        expr(n->args[i], out);
      }
      out += ")";
      return;
    }
    case ExprKind::kLoad:
    case ExprKind::kTensorRead: return memory(e, out);
    case ExprKind::kRamp: {
      const auto* n = e.as<RampNode>();
      out += "ramp(";
      expr(n->base, out);
      out += ", ";
      expr(n->stride, out);
      out += ", " + std::to_string(n->lanes) + ")";
      return;
    }
    case ExprKind::kBroadcast: {
      const auto* n = e.as<BroadcastNode>();
      out += "x" + std::to_string(n->lanes) + "(";
      expr(n->value, out);
      out += ")";
      return;
    }
    case ExprKind::kReduce: {
      const auto* n = e.as<ReduceNode>();
      out += reduce_op_name(n->op);
      out += "(";
      expr(n->source, out);
      out += ", axes=[";
      for (size_t i = 0; i < n->axes.size(); ++i) {
        out += (i ? ", " : "") + name_of(n->axes[i]->var.node()) + ":" + std::to_string(n->axes[i]->extent);
      }
      out += "])";
      return;
    }
  }
}

// `braced_scope`: an Allocate or Attr that is followed by more statements of
// its block prints its body in braces, so that where it ends is in the text.
void IRPrinter::stmt(const Stmt& s, int indent, std::string& out, bool braced_scope) {
  if (!s.defined()) return;
  std::string pad(indent * 2, ' ');
  auto scoped_body = [&](const Stmt& body) {
    if (!braced_scope) return stmt(body, indent, out, false);
    out.insert(out.size() - 1, " {");
    stmt(body, indent + 1, out, false);
    out += pad + "}\n";
  };
  switch (s.kind()) {
    case StmtKind::kStore: {
      const auto* n = s.as<StoreNode>();
      const BufferNode* b = n->buffer.get();
      auto it = bound_.find(b);
      out += pad + (it != bound_.end() ? it->second.back() : name_of(b)) + "[";
      expr(n->index, out);
      predicate(n->predicate, out);
      out += "] = ";
      expr(n->value, out);
      out += "\n";
      return;
    }
    case StmtKind::kFor: {
      const auto* n = s.as<ForNode>();
      std::string head = pad + loop_kind_name(n->loop_kind) + " ";
      std::string range = " in [";
      expr(n->min, range);
      range += is_const_value(n->min, 0) ? ", " : ", +";
      expr(n->extent, range);
      if (canonical_) {
        head += name_of(n->var.node());
      } else {
        bind(n->var.get(), n->var.name());
        head += bound_.at(n->var.get()).back();
      }
      if (n->var.dtype() != kIndexType) head += ": " + n->var.dtype().to_string();
      out += head + range + ") {\n";
      stmt(n->body, indent + 1, out, false);
      out += pad + "}\n";
      if (!canonical_) unbind(n->var.get());
      return;
    }
    case StmtKind::kSeq: {
      const auto& stmts = s.as<SeqNode>()->stmts;
      for (size_t i = 0; i < stmts.size(); ++i) stmt(stmts[i], indent, out, i + 1 < stmts.size());
      return;
    }
    case StmtKind::kIfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      out += pad + "if ";
      expr(n->cond, out);
      out += " {\n";
      stmt(n->then_case, indent + 1, out, false);
      if (n->else_case.defined()) {
        out += pad + "} else {\n";
        stmt(n->else_case, indent + 1, out, false);
      }
      out += pad + "}\n";
      return;
    }
    case StmtKind::kAllocate: {
      const auto* n = s.as<AllocateNode>();
      const BufferNode* b = n->buffer.get();
      std::string name;
      if (canonical_) {
        name = name_of(b);
      } else {
        bind(b, b->name);
        name = bound_.at(b).back();
      }
      out += pad + "alloc " + name + ": " + buffer_type_string(b) +
             (b->scope == MemoryScope::kLocal ? " local" : " workspace") + "\n";
      scoped_body(n->body);
      if (!canonical_) unbind(b);
      return;
    }
    case StmtKind::kAttr: {
      const auto* n = s.as<AttrNode>();
      out += pad + "attr " + attr_kind_name(n->attr) + " = " + std::to_string(n->value) + "\n";
      scoped_body(n->body);
      return;
    }
  }
}

std::string to_string(const Expr& e) {
  return IRPrinter().print(e);
}
std::string to_string(const Stmt& s) {
  return IRPrinter().print(s);
}

std::string to_string(const PrimFunc& f) {
  IRPrinter p;
  std::string out = "func " + f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i)
    out += (i ? ", " : "") + p.name_of(f.params[i].get()) + ": " + buffer_type_string(f.params[i].get());
  out += ") {\n";
  std::string body = p.print(f.body);
  // Indent the body one level.
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    out += "  " + body.substr(start, end - start + 1);
    start = end + 1;
  }
  return out + "}\n";
}

}  // namespace tessera
