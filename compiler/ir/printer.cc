#include "compiler/ir/printer.h"

#include <cmath>
#include <cstdio>

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

std::string format_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string IRPrinter::name_of(const VarNode* v) {
  auto [it, inserted] = names_.try_emplace(v);
  if (inserted) it->second = canonical_ ? "v" + std::to_string(next_var_++) : v->name;
  return it->second;
}
std::string IRPrinter::name_of(const TensorNode* t) {
  auto [it, inserted] = names_.try_emplace(t);
  if (inserted) it->second = canonical_ ? "t" + std::to_string(next_tensor_++) : t->name;
  return it->second;
}
std::string IRPrinter::name_of(const BufferNode* b) {
  auto [it, inserted] = names_.try_emplace(b);
  if (inserted) it->second = canonical_ ? "b" + std::to_string(next_buffer_++) : b->name;
  return it->second;
}

std::string IRPrinter::print(const Expr& e) {
  std::string out;
  expr(e, out);
  return out;
}

std::string IRPrinter::print(const Stmt& s) {
  std::string out;
  stmt(s, 0, out);
  return out;
}

void IRPrinter::expr(const Expr& e, std::string& out) {
  if (!e.defined()) {
    out += "<undef>";
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto* n = e.as<IntImmNode>();
      if (n->dtype.is_bool()) out += n->value ? "true" : "false";
      else if (n->dtype == kIndexType) out += std::to_string(n->value);
      else out += n->dtype.to_string() + "(" + std::to_string(n->value) + ")";
      return;
    }
    case ExprKind::kFloatImm: {
      const auto* n = e.as<FloatImmNode>();
      out += format_float(n->value);
      if (n->dtype != DType::f32()) out += n->dtype.to_string();
      else out += "f";
      return;
    }
    case ExprKind::kVar:
      out += name_of(e.as<VarNode>());
      return;
    case ExprKind::kMin: case ExprKind::kMax: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      out += e.kind() == ExprKind::kMin ? "min(" : "max(";
      expr(n->a, out);
      out += ", ";
      expr(n->b, out);
      out += ")";
      return;
    }
    case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul: case ExprKind::kDiv:
    case ExprKind::kMod: case ExprKind::kEQ: case ExprKind::kNE: case ExprKind::kLT:
    case ExprKind::kLE: case ExprKind::kGT: case ExprKind::kGE: case ExprKind::kAnd:
    case ExprKind::kOr: {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      out += "(";
      expr(n->a, out);
      out += binary_symbol(e.kind());
      expr(n->b, out);
      out += ")";
      return;
    }
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
    case ExprKind::kCast:
      out += e.dtype().to_string() + "(";
      expr(e.as<CastNode>()->value, out);
      out += ")";
      return;
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
    case ExprKind::kLoad: {
      const auto* n = e.as<LoadNode>();
      out += name_of(n->buffer.get()) + "[";
      expr(n->index, out);
      out += "]";
      return;
    }
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
    case ExprKind::kTensorRead: {
      const auto* n = e.as<TensorReadNode>();
      out += name_of(n->tensor.get()) + "[";
      for (size_t i = 0; i < n->indices.size(); ++i) {
        if (i) out += ", ";
        expr(n->indices[i], out);
      }
      out += "]";
      return;
    }
    case ExprKind::kReduce: {
      const auto* n = e.as<ReduceNode>();
      out += reduce_op_name(n->op);
      out += "(";
      expr(n->source, out);
      out += ", axes=[";
      for (size_t i = 0; i < n->axes.size(); ++i) {
        out += (i ? ", " : "") + name_of(n->axes[i]->var.node()) + ":" +
               std::to_string(n->axes[i]->extent);
      }
      out += "])";
      return;
    }
  }
}

void IRPrinter::stmt(const Stmt& s, int indent, std::string& out) {
  if (!s.defined()) return;
  std::string pad(indent * 2, ' ');
  switch (s.kind()) {
    case StmtKind::kStore: {
      const auto* n = s.as<StoreNode>();
      out += pad + name_of(n->buffer.get()) + "[";
      expr(n->index, out);
      out += "] = ";
      expr(n->value, out);
      out += "\n";
      return;
    }
    case StmtKind::kFor: {
      const auto* n = s.as<ForNode>();
      out += pad + loop_kind_name(n->loop_kind) + " " + name_of(n->var.node()) + " in [";
      expr(n->min, out);
      out += ", ";
      if (is_const_value(n->min, 0)) {
        expr(n->extent, out);
      } else {
        out += "+";
        expr(n->extent, out);
      }
      out += ") {\n";
      stmt(n->body, indent + 1, out);
      out += pad + "}\n";
      return;
    }
    case StmtKind::kSeq:
      for (const Stmt& c : s.as<SeqNode>()->stmts) stmt(c, indent, out);
      return;
    case StmtKind::kIfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      out += pad + "if ";
      expr(n->cond, out);
      out += " {\n";
      stmt(n->then_case, indent + 1, out);
      if (n->else_case.defined()) {
        out += pad + "} else {\n";
        stmt(n->else_case, indent + 1, out);
      }
      out += pad + "}\n";
      return;
    }
    case StmtKind::kAllocate: {
      const auto* n = s.as<AllocateNode>();
      out += pad + "alloc " + name_of(n->buffer.get()) + ": " + n->buffer->dtype.to_string() +
             shape_string(n->buffer->shape) +
             (n->buffer->scope == MemoryScope::kLocal ? " local" : " workspace") + "\n";
      stmt(n->body, indent, out);
      return;
    }
    case StmtKind::kAttr: {
      const auto* n = s.as<AttrNode>();
      out += pad + "attr " + attr_kind_name(n->attr) + " = " + std::to_string(n->value) + "\n";
      stmt(n->body, indent, out);
      return;
    }
  }
}

std::string to_string(const Expr& e) { return IRPrinter().print(e); }
std::string to_string(const Stmt& s) { return IRPrinter().print(s); }

std::string to_string(const PrimFunc& f) {
  IRPrinter p;
  std::string out = "func " + f.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    out += (i ? ", " : "") + p.name_of(f.params[i].get()) + ": " + f.params[i]->dtype.to_string() +
           shape_string(f.params[i]->shape);
  }
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
