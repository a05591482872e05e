// Tensorized loops on x86's matrix unit (CodeGen::emit_tensorized).
//
// A kTensorized loop heads a nest of constant loops around one store
//   C[c] = C[c] + dot(A[a], B[b])
// with dot u8 x s8 (CallOp::kDotU8S8, int32 C) or bfloat16 (kDotBf16,
// float32 C), each operand one 32-bit word: a word load, the four byte loads
// of matmul_u8s8's A, or pack_bf16 of two neighbouring bfloat16 loads. From
// the indices' linear forms the loops are told apart (the rows index C and
// A, the columns C and B, a reduction A and B) and each operand's base and
// strides in bytes read off. A gemm's nest has one reduction, the words; a
// direct conv's has the window's rows and columns too (ry rx rc p q k: its
// rows are output columns, A's rows the input pixels a stride apart, and
// the output rows p a second loop of rows around them, each step of it more
// tiles of C and A at another base). The words are the reduction along
// which A's words are contiguous; the nest must be whole tiles of 16
// columns and 16 words (64 bytes of A's row), with C's columns and B's
// columns contiguous too; its rows go 16 to a tile, or in tiles of the most
// rows (fewer than 16) that divide them.
//
// AMX holds eight tiles of up to 16 rows x 64 bytes. The output is walked
// in groups of at most 2 x 2 tiles of C (tiles 0-3) with a tile of A per
// row (4-5) and of B per column (6-7): C's tiles are loaded, the reduction
// runs 16 words a step (a load of each A and B tile, then TDPBUSD or
// TDPBF16PS for each C tile) inside the other reductions' loops, and C's
// tiles are stored. B is a tile of 16
// rows of words (its reduction) by 16 columns: the layout matmul_u8s8's
// words and the bfloat16 words already have. The configuration of 16-row
// tiles is loaded once where a function starts; a nest of fewer rows loads
// its own and restores it after. The runtime asks the kernel for
// the process's permission to use the tile registers when it loads a module
// that exports TESSERA_TILE_MODULE_SYMBOL (runtime/c_abi.h).
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "compiler/arith/linear.h"
#include "compiler/codegen/llvm_emitter.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/op.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/util.h"

namespace tessera::codegen_detail {
namespace {

constexpr int kTileRows = 16;   // rows of a tile
constexpr int kTileBytes = 64;  // bytes of a tile's row
constexpr int kTileWords = kTileBytes / 4;

// The rows of C's and A's tiles for a nest of `rows` rows: the most, up to
// 16, that divide them (100 rows: tiles of 10).
int64_t tile_rows_for(int64_t rows) {
  for (int64_t r = kTileRows; r > 1; --r)
    if (rows % r == 0) return r;
  return 1;
}

// The configuration (palette 1) of tiles 0-3 for C and 4-5 for A of
// `rows` rows, 6-7 for B of 16, each row 64 bytes.
std::vector<uint8_t> tile_config(int64_t rows) {
  std::vector<uint8_t> bytes(64, 0);
  bytes[0] = 1;
  for (int t = 0; t < 8; ++t) {
    bytes[16 + 2 * t] = kTileBytes;
    bytes[48 + t] = static_cast<uint8_t>(t < 6 ? rows : kTileRows);
  }
  return bytes;
}

// The first element a word operand reads: its buffer, index (elements) and
// element size.
struct WordRead {
  Buffer buffer;
  Expr index;
  int64_t element_bytes = 0;
};

const LoadNode* scalar_load(const Expr& e) {
  const auto* load = e.as<LoadNode>();
  return load && load->dtype.lanes == 1 && !load->predicate.defined() ? load : nullptr;
}

// Whether `b` is `a` plus `offset` elements of the same buffer.
bool follows(const LoadNode* a, const LoadNode* b, int64_t offset) {
  if (!a || !b || !a->buffer.same_as(b->buffer)) return false;
  arith::LinearForm d = arith::linear_form(b->index - a->index);
  return d.constant == offset &&
         std::all_of(d.terms.begin(), d.terms.end(), [](const auto& t) { return t.second == 0; });
}

struct ByteLoads : IRVisitor {
  std::vector<const LoadNode*> loads;
  bool other = false;
  void visit(const LoadNode* op) override {
    if (op->dtype == DType::u8() && op->dtype.lanes == 1 && !op->predicate.defined()) {
      loads.push_back(op);
      return;
    }
    other = true;
  }
};

// The word a dot product's operand reads, when it is one word of memory.
std::optional<WordRead> word_read(const Expr& e) {
  if (const LoadNode* load = scalar_load(e); load && load->dtype.storage_bytes() == 4)
    return WordRead{load->buffer, load->index, 4};
  if (const auto* pack = e.as<CallNode>(); pack && pack->op == CallOp::kPackBf16) {
    const LoadNode* lo = scalar_load(pack->args[0]);
    const LoadNode* hi = scalar_load(pack->args[1]);
    if (lo && lo->dtype == DType::bf16() && follows(lo, hi, 1)) return WordRead{lo->buffer, lo->index, 2};
    return std::nullopt;
  }
  // matmul_u8s8's word of four bytes: b0 + b1 * 2^8 + b2 * 2^16 + b3 * 2^24.
  if (e.dtype() != DType::i32()) return std::nullopt;
  ByteLoads bytes;
  bytes(e);
  if (bytes.other || bytes.loads.size() != 4) return std::nullopt;
  const LoadNode* first = bytes.loads[0];
  for (int r = 1; r < 4; ++r)
    if (!follows(first, bytes.loads[static_cast<size_t>(r)], r)) return std::nullopt;
  return WordRead{first->buffer, first->index, 1};
}

// An index as coefficients of the nest's loop variables (elements) plus
// what does not depend on them.
struct Access {
  WordRead read;
  std::vector<int64_t> coef;  // one a loop of the nest
  Expr base;                  // the index at the nest's first iteration
  // Bytes a step of loop `l` moves the operand by.
  int64_t bytes(size_t l) const { return coef[l] * read.element_bytes; }
};

std::optional<Access> access_of(const WordRead& read, const std::vector<const ForNode*>& loops) {
  Access a;
  a.read = read;
  a.coef.assign(loops.size(), 0);
  for (const auto& [atom, coef] : arith::linear_form(read.index).terms) {
    bool matched = false;
    for (size_t l = 0; l < loops.size(); ++l)
      if (atom.get() == loops[l]->var.get()) a.coef[l] += coef, matched = true;
    if (matched) continue;
    for (const ForNode* loop : loops)
      if (uses_var(atom, loop->var.node())) return std::nullopt;  // a loop variable not linearly
  }
  VarMap at_first;
  for (const ForNode* loop : loops) at_first[loop->var.node()] = loop->min;
  a.base = substitute(read.index, at_first);
  return a;
}

// The nest under a kTensorized loop, understood.
struct TileNest {
  std::vector<const ForNode*> loops;
  std::vector<int64_t> extents;   // one a loop
  int64_t tile_rows = kTileRows;  // rows of C's and A's tiles: the most, up to 16, that divide the rows
  const StoreNode* store = nullptr;
  bool bf16 = false;
  int64_t rows = 0, columns = 0, words = 0;  // extents (rows: the tile rows' loop's)
  Access c, a, b;
  int row = -1, column = -1, reduce = -1;  // which of the loops (reduce: the words)
  // A second loop of rows outside `row` (a conv's output rows around its
  // output columns), or -1: each of its steps is another rows x columns of
  // C, A's rows at another base.
  int outer_row = -1;
  std::vector<int> outer_reductions;  // the other reductions, outermost first

  int64_t outer_rows() const { return outer_row < 0 ? 1 : extents[static_cast<size_t>(outer_row)]; }
  int64_t row_tiles() const { return outer_rows() * (rows / tile_rows); }
  // Bytes from the first row of A (or C) to that of row tile t: the outer
  // loop of rows at t / per, tile t % per of the rows.
  int64_t row_tile_offset(const Access& x, int64_t t) const {
    const int64_t per = rows / tile_rows;
    const int64_t outer = outer_row < 0 ? 0 : x.bytes(static_cast<size_t>(outer_row));
    return (t / per) * outer + (t % per) * tile_rows * x.bytes(static_cast<size_t>(row));
  }
  // The loops C is indexed by, in the nest's order.
  std::vector<const ForNode*> c_loops() const {
    std::vector<const ForNode*> out;
    for (size_t l = 0; l < loops.size(); ++l)
      if (c.coef[l] != 0) out.push_back(loops[l]);
    return out;
  }
};

Stmt strip_attrs(Stmt s) {
  while (const auto* attr = s.as<AttrNode>()) s = attr->body;
  return s;
}

Result<TileNest> understand(const ForNode* head) {
  auto refuse = [](const std::string& why) { return Status(ErrorCode::kCodegenError, "tensorized loop: " + why); };
  std::vector<const ForNode*> loops = {head};
  Stmt body = strip_attrs(head->body);
  while (const auto* inner = body.as<ForNode>()) {
    loops.push_back(inner);
    body = strip_attrs(inner->body);
  }
  if (loops.size() < 3)
    return refuse("needs rows, columns and a reduction, not " + std::to_string(loops.size()) + " loops");
  std::vector<int64_t> extents(loops.size());
  for (size_t l = 0; l < loops.size(); ++l)
    if (!is_const_int(loops[l]->extent, &extents[l]))
      return refuse("loop " + loops[l]->var.name() + " has no constant extent");
  const auto* store = body.as<StoreNode>();
  if (!store || store->predicate.defined() || store->value.dtype().lanes != 1)
    return refuse("the nest's body is not one scalar store");
  if (store->value.kind() != ExprKind::kAdd) return refuse("the store does not accumulate");
  const auto* add = static_cast<const BinaryNode*>(store->value.get());
  const CallNode* dot = add->b.as<CallNode>();
  Expr acc = add->a;
  if (!dot) dot = add->a.as<CallNode>(), acc = add->b;
  const LoadNode* acc_load = scalar_load(acc);
  if (!dot || (dot->op != CallOp::kDotU8S8 && dot->op != CallOp::kDotBf16) || !acc_load ||
      !acc_load->buffer.same_as(store->buffer) || !structural_equal(acc_load->index, store->index))
    return refuse("the store is not C = C + dot(A, B)");
  TileNest n;
  n.loops = loops;
  n.extents = extents;
  n.store = store;
  n.bf16 = dot->op == CallOp::kDotBf16;
  if (store->buffer->dtype != (n.bf16 ? DType::f32() : DType::i32()))
    return refuse("C is " + store->buffer->dtype.to_string() + ", not the product's accumulator type");
  const std::optional<WordRead> a = word_read(dot->args[0]), b = word_read(dot->args[1]);
  if (!a || !b)
    return refuse("an operand of the dot product is not one word of memory: " +
                  to_string(a ? dot->args[1] : dot->args[0]));
  std::optional<Access> ca = access_of({store->buffer, store->index, 4}, loops), aa = access_of(*a, loops),
                        ba = access_of(*b, loops);
  if (!ca || !aa || !ba) return refuse("an index is not linear in the nest's loops");
  n.c = *ca, n.a = *aa, n.b = *ba;
  std::vector<int> reductions, rows;
  for (size_t l = 0; l < loops.size(); ++l) {
    const bool in_c = n.c.coef[l] != 0, in_a = n.a.coef[l] != 0, in_b = n.b.coef[l] != 0;
    const int li = static_cast<int>(l);
    if (in_c && in_a && !in_b)
      rows.push_back(li);
    else if (in_c && in_b && !in_a && n.column < 0)
      n.column = li;
    else if (in_a && in_b && !in_c)
      reductions.push_back(li);
    else if (extents[l] != 1)  // a loop of one step that nothing reads is no loop
      return refuse("loop " + loops[l]->var.name() + " is not the rows, the columns or a reduction");
  }
  if (rows.empty() || n.column < 0 || reductions.empty())
    return refuse("the loops are not rows, columns and a reduction");
  if (rows.size() > 2) return refuse("more than two loops of rows");
  // The tile's rows: the inner loop of rows.
  n.row = rows.back();
  if (rows.size() == 2) n.outer_row = rows.front();
  // The words: the innermost reduction along which A's words are contiguous.
  for (int l : reductions)
    if (n.a.bytes(static_cast<size_t>(l)) == 4) n.reduce = l;
  for (int l : reductions)
    if (l != n.reduce) n.outer_reductions.push_back(l);
  n.rows = extents[static_cast<size_t>(n.row)], n.columns = extents[static_cast<size_t>(n.column)];
  // Contiguous words: C's and B's along the columns, A's along a reduction.
  if (n.reduce < 0 || n.c.coef[static_cast<size_t>(n.column)] != 1 || n.b.bytes(static_cast<size_t>(n.column)) != 4)
    return refuse("C's and B's columns and A's words must be contiguous");
  n.words = extents[static_cast<size_t>(n.reduce)];
  n.tile_rows = tile_rows_for(n.rows);
  if (n.columns % kTileRows || n.words % kTileWords)
    return refuse("the nest is " + std::to_string(n.rows) + " x " + std::to_string(n.columns) + " x " +
                  std::to_string(n.words) + " words, not whole tiles of 16 columns and 16 words");
  return n;
}

bool is_zero_constant(const Expr& e) {
  double f = 1;
  return is_const_value(e, 0) || (is_const_float(e, &f) && f == 0 && !std::signbit(f));
}

// Whether `init` is loops storing zero to the C of `n`, element for element:
// its loops are, in some order, as many as the nest's loops of C, of the
// same extents, and its index, with its loop variables renamed to the
// nest's, is the nest's C index.
bool zeroes_c(const Stmt& init, const TileNest& n) {
  std::vector<const ForNode*> loops;
  Stmt body = strip_attrs(init);
  while (const auto* loop = body.as<ForNode>()) {
    loops.push_back(loop);
    body = strip_attrs(loop->body);
  }
  const auto* store = body.as<StoreNode>();
  std::vector<const ForNode*> nest = n.c_loops();
  if (loops.size() != nest.size() || !store || store->predicate.defined() || !store->buffer.same_as(n.store->buffer) ||
      !is_zero_constant(store->value))
    return false;
  std::sort(nest.begin(), nest.end());
  do {
    VarMap renamed;
    bool same = true;
    for (size_t l = 0; l < loops.size() && same; ++l) {
      same = structural_equal(loops[l]->extent, nest[l]->extent) && structural_equal(loops[l]->min, nest[l]->min);
      renamed[loops[l]->var.node()] = nest[l]->var;
    }
    if (same && structural_equal(arith::canonical(substitute(store->index, renamed)), arith::canonical(n.store->index)))
      return true;
  } while (std::next_permutation(nest.begin(), nest.end()));
  return false;
}

}  // namespace

bool CodeGen::emit_zeroed_tile_product(const Stmt& init, const Stmt& next) {
  const auto* head = strip_attrs(next).as<ForNode>();
  if (!head || head->loop_kind != LoopKind::kTensorized) return false;
  Result<TileNest> n = understand(head);
  if (!n.is_ok() || !zeroes_c(init, *n)) return false;
  emit_tensorized(head, /*zero_c=*/true);
  return true;
}

void CodeGen::emit_tensorized(const ForNode* op, bool zero_c) {
  Result<TileNest> understood = understand(op);
  if (!understood.is_ok()) {
    if (error_.is_ok()) error_ = understood.status();
    return;
  }
  const TileNest& n = *understood;
  if (!target_.is_x86() || (n.bf16 ? !target_.amx_bf16 : !target_.amx_int8)) {
    if (error_.is_ok())
      error_ = codegen_error("tensorized loop " + op->var.name() + ": the target (" + target_.short_name() +
                             ") has no AMX " + (n.bf16 ? "bfloat16" : "int8") + " unit");
    return;
  }
  // Every function's tiles are configured for 16 rows where it starts
  // (configure_tiles); a nest of fewer rows configures its own and restores
  // those after it, so that outside it (a parallel launch's task included)
  // the configuration is always the 16 rows'.
  configure_tiles();
  const int64_t tr = n.tile_rows;
  if (tr != kTileRows) load_tile_config(tr);
  llvm::Type* i8 = b_.getInt8Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  auto intrinsic = [&](llvm::Intrinsic::ID id) { return llvm::Intrinsic::getDeclaration(&mod_, id); };

  // Byte pointers to each operand's first element, and row strides in bytes.
  auto pointer = [&](const Access& a) {
    llvm::Value* base = buffer_base(a.read.buffer.get());
    llvm::Value* offset = b_.CreateMul(b_.CreateSExt(emit(a.base), i64), b_.getInt64(a.read.element_bytes));
    return b_.CreateGEP(i8, base, offset);
  };
  llvm::Value* c_ptr = pointer(n.c);
  llvm::Value* a_ptr = pointer(n.a);
  llvm::Value* b_ptr = pointer(n.b);
  const size_t row = static_cast<size_t>(n.row), words = static_cast<size_t>(n.reduce);
  const int64_t c_row = n.c.bytes(row), a_row = n.a.bytes(row), b_row = n.b.bytes(words);
  auto at = [&](llvm::Value* ptr, llvm::Value* bytes) { return b_.CreateGEP(i8, ptr, bytes); };
  auto tile = [&](int t) { return b_.getInt8(static_cast<uint8_t>(t)); };
  llvm::Function* load = intrinsic(llvm::Intrinsic::x86_tileloadd64);
  llvm::Function* store = intrinsic(llvm::Intrinsic::x86_tilestored64);
  llvm::Function* product = intrinsic(n.bf16 ? llvm::Intrinsic::x86_tdpbf16ps : llvm::Intrinsic::x86_tdpbusd);

  const int64_t row_tiles = n.row_tiles(), column_tiles = n.columns / kTileRows;
  for (int64_t r0 = 0; r0 < row_tiles; r0 += 2) {
    const int64_t gr = std::min<int64_t>(2, row_tiles - r0);
    for (int64_t c0 = 0; c0 < column_tiles; c0 += 2) {
      const int64_t gc = std::min<int64_t>(2, column_tiles - c0);
      auto c_tile = [&](int64_t r, int64_t c) { return static_cast<int>(r * 2 + c); };
      auto a_tile = [&](int64_t r) { return static_cast<int>(4 + r); };
      auto b_tile = [&](int64_t c) { return static_cast<int>(6 + c); };
      auto c_at = [&](int64_t r, int64_t c) {
        return at(c_ptr, b_.getInt64(n.row_tile_offset(n.c, r0 + r) + (c0 + c) * kTileRows * 4));
      };
      for (int64_t r = 0; r < gr; ++r)
        for (int64_t c = 0; c < gc; ++c) {
          if (zero_c)
            b_.CreateCall(intrinsic(llvm::Intrinsic::x86_tilezero), {tile(c_tile(r, c))});
          else
            b_.CreateCall(load, {tile(c_tile(r, c)), c_at(r, c), b_.getInt64(c_row)});
        }
      // The reduction: the outer reductions' loops (a conv's window), then
      // 16 words a step; a_off and b_off are the bytes they have moved A and
      // B by.
      std::function<void(size_t, llvm::Value*, llvm::Value*)> reduce = [&](size_t level, llvm::Value* a_off,
                                                                           llvm::Value* b_off) {
        if (level < n.outer_reductions.size()) {
          const size_t l = static_cast<size_t>(n.outer_reductions[level]);
          emit_counted_loop(n.extents[l], "tile.window", [&](llvm::Value* i) {
            reduce(level + 1, b_.CreateAdd(a_off, b_.CreateMul(i, b_.getInt64(n.a.bytes(l)))),
                   b_.CreateAdd(b_off, b_.CreateMul(i, b_.getInt64(n.b.bytes(l)))));
          });
          return;
        }
        emit_counted_loop(n.words / kTileWords, "tile.k", [&](llvm::Value* step) {
          for (int64_t r = 0; r < gr; ++r) {
            llvm::Value* bytes = b_.CreateAdd(b_.CreateAdd(a_off, b_.getInt64(n.row_tile_offset(n.a, r0 + r))),
                                              b_.CreateMul(step, b_.getInt64(kTileBytes)));
            b_.CreateCall(load, {tile(a_tile(r)), at(a_ptr, bytes), b_.getInt64(a_row)});
          }
          for (int64_t c = 0; c < gc; ++c) {
            llvm::Value* bytes = b_.CreateAdd(b_.CreateAdd(b_off, b_.getInt64((c0 + c) * kTileRows * 4)),
                                              b_.CreateMul(step, b_.getInt64(kTileWords * b_row)));
            b_.CreateCall(load, {tile(b_tile(c)), at(b_ptr, bytes), b_.getInt64(b_row)});
          }
          for (int64_t r = 0; r < gr; ++r)
            for (int64_t c = 0; c < gc; ++c)
              b_.CreateCall(product, {tile(c_tile(r, c)), tile(a_tile(r)), tile(b_tile(c))});
        });
      };
      reduce(0, b_.getInt64(0), b_.getInt64(0));
      for (int64_t r = 0; r < gr; ++r)
        for (int64_t c = 0; c < gc; ++c) b_.CreateCall(store, {tile(c_tile(r, c)), c_at(r, c), b_.getInt64(c_row)});
    }
  }
  if (tr != kTileRows) load_tile_config(kTileRows);
}

void CodeGen::emit_counted_loop(int64_t extent, const std::string& name,
                                const std::function<void(llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, name, fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, name + ".i");
  i->addIncoming(b_.getInt64(0), pre);
  body(i);
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(extent)), header, exit);
  b_.SetInsertPoint(exit);
}

llvm::GlobalVariable* CodeGen::tile_config_global(int64_t rows) {
  const std::string name = "tessera.tile_config." + std::to_string(rows);
  if (llvm::GlobalVariable* config = mod_.getNamedGlobal(name)) return config;
  const std::vector<uint8_t> bytes = tile_config(rows);
  auto* config =
      new llvm::GlobalVariable(mod_, llvm::ArrayType::get(b_.getInt8Ty(), 64), true, llvm::GlobalValue::PrivateLinkage,
                               llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint8_t>(bytes)), name);
  config->setAlignment(llvm::Align(64));
  return config;
}

void CodeGen::load_tile_config(int64_t rows) {
  b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_ldtilecfg), {tile_config_global(rows)});
}

void CodeGen::configure_tiles() {
  if (!tile_functions_.insert(fn_).second) return;
  mark_tile_module();
  // In the entry block: once a call of the function (a task body's tiles are
  // its thread's). A kernel releases its tiles where it returns
  // (release_tiles); a task body keeps them configured, since the caller
  // may run a task itself between nests of its own, with the same palette.
  llvm::IRBuilder<> entry(entry_);
  entry.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_ldtilecfg),
                   {tile_config_global(kTileRows)});
}

void CodeGen::release_tiles() {
  if (tile_functions_.count(fn_))
    b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_tilerelease), {});
}

void CodeGen::mark_tile_module() {
  // runtime/c_abi.h's TESSERA_TILE_MODULE_SYMBOL.
  constexpr const char* kSymbol = "tessera_module_uses_tiles";
  if (mod_.getNamedGlobal(kSymbol)) return;
  new llvm::GlobalVariable(mod_, b_.getInt32Ty(), true, llvm::GlobalValue::WeakODRLinkage, b_.getInt32(1), kSymbol);
}

}  // namespace tessera::codegen_detail
