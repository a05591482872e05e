#include "compiler/ir/parser.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

namespace tessera {
namespace {

// ---------------------------------------------------------------------------
// Tokens

enum class Tok : uint8_t { kIdent, kInt, kFloat, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  int line = 1, col = 1;
};

Status error_at(int line, int col, const std::string& message) {
  return Status(ErrorCode::kParseError, std::to_string(line) + ":" + std::to_string(col) + ": " + message);
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c) || c == '.';
}

class Lexer {
 public:
  explicit Lexer(const std::string& text) : text_(text) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= text_.size()) {
        out.push_back(t);
        return out;
      }
      const char c = text_[pos_];
      if (is_ident_start(c)) {
        t.kind = Tok::kIdent;
        t.text = take_while(is_ident_char);
      } else if (is_digit(c)) {
        number(t);
      } else if (!punct(t)) {
        return error_at(line_, col_, std::string("unexpected character '") + c + "'");
      }
      out.push_back(std::move(t));
    }
  }

 private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      advance();
  }
  std::string take_while(bool (*pred)(char)) {
    const size_t start = pos_;
    while (pos_ < text_.size() && pred(text_[pos_])) advance();
    return text_.substr(start, pos_ - start);
  }
  // 12, 1.5, 1e-05, with a type suffix on floats: 1.5f, 2.0float64.
  void number(Token& t) {
    t.kind = Tok::kInt;
    t.text = take_while(is_digit);
    if (pos_ < text_.size() && text_[pos_] == '.') {
      t.kind = Tok::kFloat;
      advance();
      t.text += "." + take_while(is_digit);
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
      if (k < text_.size() && is_digit(text_[k])) {
        t.kind = Tok::kFloat;
        while (pos_ < k) {
          t.text += text_[pos_];
          advance();
        }
        t.text += take_while(is_digit);
      }
    }
    if (pos_ < text_.size() && is_ident_start(text_[pos_])) {
      t.kind = Tok::kFloat;  // a suffix; checked by the parser
      t.text += take_while(is_ident_char);
    }
  }
  bool punct(Token& t) {
    static const char* const kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    t.kind = Tok::kPunct;
    for (const char* p : kTwo) {
      if (text_.compare(pos_, 2, p) == 0) {
        t.text = p;
        advance();
        advance();
        return true;
      }
    }
    if (std::string("()[]{},:;=<>!+-*/%").find(text_[pos_]) == std::string::npos) return false;
    t.text = std::string(1, text_[pos_]);
    advance();
    return true;
  }

  const std::string& text_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

// ---------------------------------------------------------------------------
// Names and types

// "float32", "int8", "bool", "float32x4".
bool parse_dtype_name(const std::string& name, DType* out) {
  if (name == "handle") {
    *out = DType::handle();
    return true;
  }
  if (DType::parse(name, out)) return true;
  const size_t x = name.rfind('x');
  if (x == std::string::npos || x + 1 >= name.size()) return false;
  for (size_t i = x + 1; i < name.size(); ++i)
    if (!is_digit(name[i])) return false;
  DType scalar;
  if (!DType::parse(name.substr(0, x), &scalar)) return false;
  const long lanes = std::strtol(name.c_str() + x + 1, nullptr, 10);
  if (lanes < 2 || lanes > 65535) return false;
  *out = scalar.with_lanes(static_cast<int>(lanes));
  return true;
}

// The float literal spellings inf and nan, with their type suffix.
bool is_float_special(const std::string& text) {
  if (text.rfind("inf", 0) != 0 && text.rfind("nan", 0) != 0) return false;
  DType t;
  const std::string suffix = text.substr(3);
  return suffix.empty() || suffix == "f" || (parse_dtype_name(suffix, &t) && t.is_float() && t.is_scalar());
}

struct BinaryOp {
  const char* symbol;
  ExprKind kind;
  int level;  // higher binds tighter
};
constexpr BinaryOp kBinaryOps[] = {
    {"||", ExprKind::kOr, 0}, {"&&", ExprKind::kAnd, 1}, {"==", ExprKind::kEQ, 2}, {"!=", ExprKind::kNE, 2},
    {"<", ExprKind::kLT, 3},  {"<=", ExprKind::kLE, 3},  {">", ExprKind::kGT, 3},  {">=", ExprKind::kGE, 3},
    {"+", ExprKind::kAdd, 4}, {"-", ExprKind::kSub, 4},  {"*", ExprKind::kMul, 5}, {"/", ExprKind::kDiv, 5},
    {"%", ExprKind::kMod, 5},
};
constexpr int kTightestLevel = 5;

const CallOp kCallOps[] = {CallOp::kExp,     CallOp::kLog,     CallOp::kSqrt,    CallOp::kTanh,    CallOp::kErf,
                           CallOp::kAbs,     CallOp::kFloor,   CallOp::kCeil,    CallOp::kRound,   CallOp::kPow,
                           CallOp::kSigmoid, CallOp::kDotU8S8, CallOp::kDotBf16, CallOp::kPackBf16};

std::string type_name(const Expr& e) {
  return e.dtype().to_string();
}

// ---------------------------------------------------------------------------
// The parser: recursive descent over the tokens; binders are scoped.

class IRParser {
 public:
  IRParser(std::vector<Token> tokens, const ParseContext& context) : toks_(std::move(tokens)), ctx_(context) {}

  Result<Expr> whole_expr() {
    TESSERA_ASSIGN_OR_RETURN(Expr e, expr());
    TESSERA_RETURN_IF_ERROR(expect_end());
    return e;
  }
  Result<Stmt> whole_stmt() {
    TESSERA_ASSIGN_OR_RETURN(Stmt s, stmts_until_close());
    TESSERA_RETURN_IF_ERROR(expect_end());
    return s;
  }
  Result<PrimFunc> whole_func();

 private:
  // Tokens
  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is(const char* punct, size_t k = 0) const { return peek(k).kind == Tok::kPunct && peek(k).text == punct; }
  bool is_word(const char* word, size_t k = 0) const { return peek(k).kind == Tok::kIdent && peek(k).text == word; }
  bool accept(const char* punct) {
    if (!is(punct)) return false;
    next();
    return true;
  }
  Status error(const Token& t, const std::string& message) const { return error_at(t.line, t.col, message); }
  static std::string describe(const Token& t) { return t.kind == Tok::kEnd ? "the end" : "'" + t.text + "'"; }
  Status expect(const char* punct) {
    if (accept(punct)) return Status::ok();
    return error(peek(), std::string("expected '") + punct + "' but found " + describe(peek()));
  }
  Status expect_end() const {
    if (peek().kind == Tok::kEnd) return Status::ok();
    return error(peek(), "expected the end but found " + describe(peek()));
  }
  Result<std::string> ident(const char* what) {
    if (peek().kind != Tok::kIdent)
      return error(peek(), std::string("expected ") + what + " but found " + describe(peek()));
    return next().text;
  }
  Result<int64_t> int_literal(const char* what);

  // Expressions
  Result<Expr> expr() { return binary_level(0); }
  Result<Expr> binary_level(int level);
  Result<Expr> unary();
  Result<Expr> primary();
  Result<Expr> literal(const Token& t, bool negative);
  Result<Expr> builtin(const Token& name);
  Result<Expr> cast_or_typed_literal(const Token& name, DType t);
  Result<Expr> intrinsic(const Token& name, CallOp op);
  Result<Expr> memory(const Token& name);
  Result<Expr> predicate(const Token& name, const Expr& index);
  Result<std::vector<Expr>> args();
  Result<Expr> make_checked_binary(const Token& at, ExprKind kind, const char* symbol, Expr a, Expr b);
  Result<Expr> variable(const Token& name);

  // Statements
  Result<Stmt> stmts_until_close();
  Result<Stmt> block();
  Result<Stmt> scoped_body();
  Result<Stmt> statement();
  Result<Stmt> for_stmt();
  Result<Stmt> if_stmt();
  Result<Stmt> alloc_stmt();
  Result<Stmt> attr_stmt();
  Result<Stmt> store_stmt();
  Result<DType> dtype();
  Result<std::vector<int64_t>> shape();
  const Buffer* find_buffer(const std::string& name) const;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const ParseContext& ctx_;
  std::vector<std::pair<std::string, Var>> vars_;        // enclosing loops, innermost last
  std::vector<std::pair<std::string, Buffer>> buffers_;  // parameters and enclosing allocs
};

Result<int64_t> IRParser::int_literal(const char* what) {
  const bool negative = accept("-");
  if (peek().kind != Tok::kInt)
    return error(peek(), std::string("expected ") + what + " but found " + describe(peek()));
  const Token& t = next();
  errno = 0;
  const long long v = std::strtoll(((negative ? "-" : "") + t.text).c_str(), nullptr, 10);
  if (errno == ERANGE) return error(t, "integer " + t.text + " does not fit in 64 bits");
  return static_cast<int64_t>(v);
}

Result<Expr> IRParser::make_checked_binary(const Token& at, ExprKind kind, const char* symbol, Expr a, Expr b) {
  if (a.dtype() != b.dtype())
    return error(at, std::string("operands of '") + symbol + "' have types " + type_name(a) + " and " + type_name(b));
  if ((kind == ExprKind::kAnd || kind == ExprKind::kOr) && !a.dtype().is_bool())
    return error(at, std::string("operands of '") + symbol + "' must be bool, not " + type_name(a));
  return make_binary(kind, std::move(a), std::move(b));
}

Result<Expr> IRParser::binary_level(int level) {
  if (level > kTightestLevel) return unary();
  TESSERA_ASSIGN_OR_RETURN(Expr lhs, binary_level(level + 1));
  for (;;) {
    const BinaryOp* op = nullptr;
    for (const BinaryOp& candidate : kBinaryOps)
      if (candidate.level == level && is(candidate.symbol)) op = &candidate;
    if (!op) return lhs;
    const Token at = next();
    TESSERA_ASSIGN_OR_RETURN(Expr rhs, binary_level(level + 1));
    TESSERA_ASSIGN_OR_RETURN(lhs, make_checked_binary(at, op->kind, op->symbol, std::move(lhs), std::move(rhs)));
  }
}

Result<Expr> IRParser::unary() {
  if (is("!")) {
    const Token at = next();
    TESSERA_ASSIGN_OR_RETURN(Expr a, unary());
    if (!a.dtype().is_bool()) return error(at, "'!' of " + type_name(a) + ", not bool");
    return make_not(std::move(a));
  }
  if (is("-")) {
    const Token at = next();
    const Token& t = peek();
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat || (t.kind == Tok::kIdent && is_float_special(t.text)))
      return literal(next(), /*negative=*/true);
    return error(at, "'-' applies to constants only; write (0 - x)");
  }
  return primary();
}

Result<Expr> IRParser::literal(const Token& t, bool negative) {
  if (t.kind == Tok::kInt) {
    errno = 0;
    const long long v = std::strtoll(((negative ? "-" : "") + t.text).c_str(), nullptr, 10);
    if (errno == ERANGE) return error(t, "integer " + t.text + " does not fit in 64 bits");
    return make_int(v);
  }
  // A float: digits (or inf/nan) and a type suffix: none or f for float32.
  size_t split = 0;
  if (t.kind == Tok::kIdent) {
    split = 3;  // inf, nan
  } else {
    const std::string& x = t.text;
    while (split < x.size() && (is_digit(x[split]) || x[split] == '.')) ++split;
    if (split < x.size() && (x[split] == 'e' || x[split] == 'E')) {
      size_t k = split + 1;
      if (k < x.size() && (x[k] == '+' || x[k] == '-')) ++k;
      if (k < x.size() && is_digit(x[k])) {
        split = k;
        while (split < x.size() && is_digit(x[split])) ++split;
      }
    }
  }
  const std::string digits = t.text.substr(0, split), suffix = t.text.substr(split);
  DType type = DType::f32();
  if (!suffix.empty() && suffix != "f" && !(parse_dtype_name(suffix, &type) && type.is_float() && type.is_scalar()))
    return error(t, "'" + suffix + "' is not a float type suffix (f, float16, bfloat16, float64)");
  const double v = std::strtod(digits.c_str(), nullptr);
  return make_float(negative ? -v : v, type);
}

Result<Expr> IRParser::variable(const Token& name) {
  for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
    if (it->first == name.text) return static_cast<const Expr&>(it->second);
  auto found = ctx_.vars.find(name.text);
  if (found != ctx_.vars.end()) return static_cast<const Expr&>(found->second);
  return error(name, "unknown variable '" + name.text + "'");
}

Result<Expr> IRParser::primary() {
  if (accept("(")) {
    TESSERA_ASSIGN_OR_RETURN(Expr e, expr());
    TESSERA_RETURN_IF_ERROR(expect(")"));
    return e;
  }
  const Token t = peek();
  if (t.kind == Tok::kInt || t.kind == Tok::kFloat) return literal(next(), false);
  if (t.kind != Tok::kIdent) return error(t, "expected an expression but found " + describe(t));
  next();
  if (t.text == "true" || t.text == "false") return make_bool(t.text == "true");
  if (is_float_special(t.text)) return literal(t, false);
  if (is("(")) return builtin(t);
  if (is("[")) return memory(t);
  return variable(t);
}

Result<std::vector<Expr>> IRParser::args() {
  std::vector<Expr> out;
  TESSERA_RETURN_IF_ERROR(expect("("));
  if (accept(")")) return out;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(Expr e, expr());
    out.push_back(std::move(e));
    if (accept(")")) return out;
    TESSERA_RETURN_IF_ERROR(expect(","));
    if (is_word("axes") && is("=", 1))
      return error(peek(), "reductions do not parse: the text form is for lowered loop IR");
  }
}

Result<Expr> IRParser::builtin(const Token& name) {
  const std::string& f = name.text;
  DType type;
  if (parse_dtype_name(f, &type)) return cast_or_typed_literal(name, type);
  for (CallOp op : kCallOps)
    if (f == call_op_name(op)) return intrinsic(name, op);
  if (f.size() > 1 && f[0] == 'x' && f.find_first_not_of("0123456789", 1) == std::string::npos) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> a, args());
    const long lanes = std::strtol(f.c_str() + 1, nullptr, 10);
    if (a.size() != 1 || !a[0].dtype().is_scalar() || lanes < 2 || lanes > 65535)
      return error(name, f + "(...) broadcasts one scalar to 2 or more lanes");
    return make_broadcast(a[0], static_cast<int>(lanes));
  }
  if (f == "sum" || f == "prod") return error(name, "reductions do not parse: the text form is for lowered loop IR");
  TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> a, args());
  if (f == "min" || f == "max") {
    if (a.size() != 2) return error(name, f + " takes 2 arguments, not " + std::to_string(a.size()));
    return make_checked_binary(name, f == "min" ? ExprKind::kMin : ExprKind::kMax, f.c_str(), a[0], a[1]);
  }
  if (f == "select") {
    if (a.size() != 3) return error(name, "select takes 3 arguments, not " + std::to_string(a.size()));
    if (!a[0].dtype().is_bool()) return error(name, "select condition of type " + type_name(a[0]) + ", not bool");
    if (a[1].dtype() != a[2].dtype())
      return error(name, "select branches of types " + type_name(a[1]) + " and " + type_name(a[2]));
    if (a[0].dtype().lanes != 1 && a[0].dtype().lanes != a[1].dtype().lanes)
      return error(name, "select condition lanes differ from its branches'");
    return make_select(a[0], a[1], a[2]);
  }
  if (f == "ramp") {
    int64_t lanes = 0;
    if (a.size() != 3 || !is_const_int(a[2], &lanes) || a[2].dtype() != kIndexType)
      return error(name, "ramp takes (base, stride, lanes) with constant lanes");
    if (!a[0].dtype().is_scalar() || a[0].dtype() != a[1].dtype() || lanes < 2 || lanes > 65535)
      return error(name, "ramp of base " + type_name(a[0]) + ", stride " + type_name(a[1]) + ", " +
                             std::to_string(lanes) + " lanes");
    return make_ramp(a[0], a[1], static_cast<int>(lanes));
  }
  return error(name, "unknown function '" + f + "'");
}

// int32(5) is an int32 constant; float32(x), int32(int64(5)) are casts.
Result<Expr> IRParser::cast_or_typed_literal(const Token& name, DType t) {
  TESSERA_RETURN_IF_ERROR(expect("("));
  const bool literal_next = peek().kind == Tok::kInt || (is("-") && peek(1).kind == Tok::kInt);
  const bool closes = is(")", is("-") ? 2 : 1);
  if (t.is_integral() && t.is_scalar() && literal_next && closes) {
    TESSERA_ASSIGN_OR_RETURN(int64_t v, int_literal("an integer"));
    TESSERA_RETURN_IF_ERROR(expect(")"));
    return make_int(v, t);
  }
  TESSERA_ASSIGN_OR_RETURN(Expr value, expr());
  TESSERA_RETURN_IF_ERROR(expect(")"));
  if (value.dtype().lanes != t.lanes)
    return error(name, "cast of " + type_name(value) + " to " + t.to_string() + " changes the lanes");
  return make_cast(t, std::move(value));
}

Result<Expr> IRParser::intrinsic(const Token& name, CallOp op) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> a, args());
  const size_t want = op == CallOp::kPow || is_dot_product(op) || op == CallOp::kPackBf16 ? 2 : 1;
  if (a.size() != want) return error(name, name.text + " takes " + std::to_string(want) + " argument(s)");
  for (const Expr& x : a)
    if (x.dtype() != a[0].dtype()) return error(name, name.text + " of arguments of different types");
  const bool types_fit =
      is_dot_product(op) ? a[0].dtype().element_of() == DType::i32() : a[0].dtype().is_float() || op == CallOp::kAbs;
  if (!types_fit) return error(name, name.text + " of " + type_name(a[0]));
  return make_call(op, std::move(a));
}

const Buffer* IRParser::find_buffer(const std::string& name) const {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it)
    if (it->first == name) return &it->second;
  auto found = ctx_.buffers.find(name);
  return found != ctx_.buffers.end() ? &found->second : nullptr;
}

// " if P" inside an access's brackets: P is bool with the index's lanes.
Result<Expr> IRParser::predicate(const Token& name, const Expr& index) {
  next();  // "if"
  const Token at = peek();
  TESSERA_ASSIGN_OR_RETURN(Expr p, expr());
  if (p.dtype() != DType::boolean(index.dtype().lanes))
    return error(at, "predicate of " + name.text + " of type " + type_name(p) + ", not " +
                         DType::boolean(index.dtype().lanes).to_string());
  return p;
}

Result<Expr> IRParser::memory(const Token& name) {
  TESSERA_RETURN_IF_ERROR(expect("["));
  std::vector<Expr> indices;
  Expr pred;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(Expr i, expr());
    indices.push_back(std::move(i));
    if (is_word("if")) {
      TESSERA_ASSIGN_OR_RETURN(pred, predicate(name, indices.back()));
      TESSERA_RETURN_IF_ERROR(expect("]"));
      break;
    }
    if (accept("]")) break;
    TESSERA_RETURN_IF_ERROR(expect(","));
  }
  if (const Buffer* b = find_buffer(name.text)) {
    if (indices.size() != 1) return error(name, "buffer " + name.text + " takes one flat index");
    if (indices[0].dtype().element_of() != kIndexType)
      return error(name, "index of " + name.text + " of type " + type_name(indices[0]) + ", not int64");
    return make_load(*b, indices[0], pred);
  }
  if (pred.defined())
    return error(name, "tensor " + name.text + " is read whole; only buffer accesses take a predicate");
  auto t = ctx_.tensors.find(name.text);
  if (t == ctx_.tensors.end()) return error(name, "unknown buffer '" + name.text + "'");
  if (static_cast<int>(indices.size()) != t->second->ndim())
    return error(name, "tensor " + name.text + " has " + std::to_string(t->second->ndim()) + " dimensions");
  for (const Expr& i : indices)
    if (i.dtype() != kIndexType) return error(name, "index of " + name.text + " of type " + type_name(i));
  return make_tensor_read(t->second, std::move(indices));
}

// ---------------------------------------------------------------------------
// Statements

Result<Stmt> IRParser::stmts_until_close() {
  std::vector<Stmt> stmts;
  for (;;) {
    while (accept(";")) {
    }
    if (is("}") || peek().kind == Tok::kEnd) break;
    TESSERA_ASSIGN_OR_RETURN(Stmt s, statement());
    stmts.push_back(std::move(s));
  }
  return make_seq(std::move(stmts));
}

Result<Stmt> IRParser::block() {
  TESSERA_RETURN_IF_ERROR(expect("{"));
  TESSERA_ASSIGN_OR_RETURN(Stmt s, stmts_until_close());
  TESSERA_RETURN_IF_ERROR(expect("}"));
  return s;
}

// The body of an alloc or attr: a block, or the rest of the enclosing one.
Result<Stmt> IRParser::scoped_body() {
  return is("{") ? block() : stmts_until_close();
}

Result<Stmt> IRParser::statement() {
  const Token& t = peek();
  if (t.kind == Tok::kIdent && peek(1).kind == Tok::kIdent) {
    for (LoopKind k :
         {LoopKind::kSerial, LoopKind::kParallel, LoopKind::kVectorized, LoopKind::kUnrolled, LoopKind::kTensorized})
      if (t.text == loop_kind_name(k)) return for_stmt();
    if (t.text == "alloc") return alloc_stmt();
    if (t.text == "attr") return attr_stmt();
  }
  if (is_word("if")) return if_stmt();
  if (t.kind == Tok::kIdent) return store_stmt();
  return error(t, "expected a statement but found " + describe(t));
}

Result<Stmt> IRParser::for_stmt() {
  const Token kind_token = next();
  LoopKind kind = LoopKind::kSerial;
  for (LoopKind k :
       {LoopKind::kSerial, LoopKind::kParallel, LoopKind::kVectorized, LoopKind::kUnrolled, LoopKind::kTensorized})
    if (kind_token.text == loop_kind_name(k)) kind = k;
  TESSERA_ASSIGN_OR_RETURN(std::string name, ident("a loop variable"));
  DType type = kIndexType;
  if (accept(":")) {
    TESSERA_ASSIGN_OR_RETURN(type, dtype());
  }
  if (!is_word("in")) return error(peek(), "expected 'in' but found " + describe(peek()));
  next();
  TESSERA_RETURN_IF_ERROR(expect("["));
  TESSERA_ASSIGN_OR_RETURN(Expr min, expr());
  TESSERA_RETURN_IF_ERROR(expect(","));
  const bool relative = accept("+");
  const Token extent_token = peek();
  TESSERA_ASSIGN_OR_RETURN(Expr extent, expr());
  TESSERA_RETURN_IF_ERROR(expect(")"));
  if (!relative && !is_const_value(min, 0))
    return error(extent_token, "a loop from a non-zero minimum is written [min, +extent)");
  if (min.dtype() != kIndexType || extent.dtype() != kIndexType)
    return error(kind_token, "loop bounds of types " + type_name(min) + " and " + type_name(extent) + ", not int64");
  Var var(name, type);
  vars_.emplace_back(name, var);
  Result<Stmt> body = block();
  vars_.pop_back();
  if (!body.is_ok()) return body.status();
  return make_for(var, min, extent, kind, *body);
}

Result<Stmt> IRParser::if_stmt() {
  const Token at = next();
  TESSERA_ASSIGN_OR_RETURN(Expr cond, expr());
  if (cond.dtype() != DType::boolean()) return error(at, "if condition of type " + type_name(cond) + ", not bool");
  TESSERA_ASSIGN_OR_RETURN(Stmt then_case, block());
  Stmt else_case;
  if (is_word("else")) {
    next();
    TESSERA_ASSIGN_OR_RETURN(else_case, block());
  }
  return make_if(cond, then_case, else_case);
}

Result<Stmt> IRParser::alloc_stmt() {
  next();
  TESSERA_ASSIGN_OR_RETURN(std::string name, ident("a buffer name"));
  TESSERA_RETURN_IF_ERROR(expect(":"));
  TESSERA_ASSIGN_OR_RETURN(DType type, dtype());
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, shape());
  const Token scope_token = peek();
  TESSERA_ASSIGN_OR_RETURN(std::string scope_name, ident("local or workspace"));
  if (scope_name != "local" && scope_name != "workspace")
    return error(scope_token, "an alloc is local or workspace, not " + scope_name);
  Buffer buffer = make_buffer(name, type, dims, scope_name == "local" ? MemoryScope::kLocal : MemoryScope::kWorkspace);
  buffers_.emplace_back(name, buffer);
  Result<Stmt> body = scoped_body();
  buffers_.pop_back();
  if (!body.is_ok()) return body.status();
  return make_allocate(buffer, *body);
}

Result<Stmt> IRParser::attr_stmt() {
  next();
  const Token name = peek();
  TESSERA_ASSIGN_OR_RETURN(std::string attr_name, ident("an attribute"));
  if (attr_name != attr_kind_name(AttrKind::kAutoUnrollMaxStep))
    return error(name, "unknown attribute '" + attr_name + "'");
  TESSERA_RETURN_IF_ERROR(expect("="));
  TESSERA_ASSIGN_OR_RETURN(int64_t value, int_literal("an integer"));
  TESSERA_ASSIGN_OR_RETURN(Stmt body, scoped_body());
  return make_attr(AttrKind::kAutoUnrollMaxStep, value, body);
}

Result<Stmt> IRParser::store_stmt() {
  const Token name = next();
  const Buffer* b = find_buffer(name.text);
  if (!b) return error(name, "unknown buffer '" + name.text + "'");
  TESSERA_RETURN_IF_ERROR(expect("["));
  TESSERA_ASSIGN_OR_RETURN(Expr index, expr());
  Expr pred;
  if (is_word("if")) {
    TESSERA_ASSIGN_OR_RETURN(pred, predicate(name, index));
  }
  TESSERA_RETURN_IF_ERROR(expect("]"));
  const Token at = peek();
  TESSERA_RETURN_IF_ERROR(expect("="));
  TESSERA_ASSIGN_OR_RETURN(Expr value, expr());
  if (index.dtype().element_of() != kIndexType)
    return error(name, "index of " + name.text + " of type " + type_name(index) + ", not int64");
  const DType want = (*b)->dtype.with_lanes(index.dtype().lanes);
  if (value.dtype() != want)
    return error(at, "store of " + type_name(value) + " to " + name.text + ", which takes " + want.to_string());
  return make_store(*b, value, index, pred);
}

Result<DType> IRParser::dtype() {
  const Token t = peek();
  TESSERA_ASSIGN_OR_RETURN(std::string name, ident("a type"));
  DType type;
  if (!parse_dtype_name(name, &type)) return error(t, "unknown type '" + name + "'");
  return type;
}

Result<std::vector<int64_t>> IRParser::shape() {
  std::vector<int64_t> dims;
  TESSERA_RETURN_IF_ERROR(expect("["));
  if (accept("]")) return dims;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(int64_t d, int_literal("a dimension"));
    dims.push_back(d);
    if (accept("]")) return dims;
    TESSERA_RETURN_IF_ERROR(expect(","));
  }
}

Result<PrimFunc> IRParser::whole_func() {
  if (!is_word("func")) return error(peek(), "expected 'func' but found " + describe(peek()));
  next();
  PrimFunc f;
  TESSERA_ASSIGN_OR_RETURN(f.name, ident("a function name"));
  TESSERA_RETURN_IF_ERROR(expect("("));
  while (!accept(")")) {
    if (!f.params.empty()) TESSERA_RETURN_IF_ERROR(expect(","));
    TESSERA_ASSIGN_OR_RETURN(std::string name, ident("a parameter name"));
    TESSERA_RETURN_IF_ERROR(expect(":"));
    TESSERA_ASSIGN_OR_RETURN(DType type, dtype());
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, shape());
    f.params.push_back(make_buffer(name, type, dims));
    buffers_.emplace_back(name, f.params.back());
  }
  TESSERA_ASSIGN_OR_RETURN(f.body, block());
  TESSERA_RETURN_IF_ERROR(expect_end());
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------

void ParseContext::add_free_names(const IRPrinter& printer) {
  const IRPrinter::FreeNames& names = printer.free_names();
  for (const auto& [name, v] : names.vars) vars[name] = v;
  for (const auto& [name, b] : names.buffers) buffers[name] = b;
  for (const auto& [name, t] : names.tensors) tensors[name] = t;
}

ParseContext ParseContext::of(const Stmt& s) {
  IRPrinter p;
  (void)p.print(s);
  ParseContext ctx;
  ctx.add_free_names(p);
  return ctx;
}

ParseContext ParseContext::of(const Expr& e) {
  IRPrinter p;
  (void)p.print(e);
  ParseContext ctx;
  ctx.add_free_names(p);
  return ctx;
}

ParseContext ParseContext::of(const PrimFunc& f) {
  IRPrinter p;
  for (const Buffer& b : f.params) p.name_of(b.get());
  ParseContext ctx;
  ctx.add_free_names(p);
  return ctx;
}

Result<Expr> parse_expr(const std::string& text, const ParseContext& context) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text).run());
  return IRParser(std::move(tokens), context).whole_expr();
}

Result<Stmt> parse_stmt(const std::string& text, const ParseContext& context) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text).run());
  return IRParser(std::move(tokens), context).whole_stmt();
}

Result<PrimFunc> parse_func(const std::string& text, const ParseContext& context) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text).run());
  return IRParser(std::move(tokens), context).whole_func();
}

}  // namespace tessera
