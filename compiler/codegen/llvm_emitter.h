// The LLVM IR emitter of compiler/codegen (llvm_codegen.cc): one CodeGen a
// module, shared by the files that implement its parts (llvm_memory.cc: loads
// and stores). Internal to tessera_codegen.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "base/target.h"
#include "compiler/ir/stmt.h"

namespace tessera::codegen_detail {

/// A kCodegenError with `why`.
inline Status codegen_error(const std::string& why) {
  return Status(ErrorCode::kCodegenError, why);
}

/// A vector index as a lane-invariant part plus a constant offset per lane,
/// when it is one: ramps of constant stride, broadcasts, sums, and products,
/// quotients and remainders by constants of parts whose invariant part is a
/// constant (the interleave `ramp(0, 1, n) / 2 + ramp(0, 1, n) % 2 * S`)
/// (llvm_memory.cc).
struct LaneOffsets {
  Expr invariant;                ///< a scalar index
  std::vector<int64_t> offsets;  ///< one per lane
};
std::optional<LaneOffsets> lane_offsets(const Expr& e, int lanes);

class CodeGen {
 public:
  CodeGen(llvm::LLVMContext& ctx, llvm::Module& mod, const Target& target)
      : ctx_(ctx), mod_(mod), b_(ctx), target_(target) {}

  Status add_function(const PrimFunc& f);

 private:
  llvm::Type* type_of(DType t);
  llvm::Type* storage_type(DType t);
  void set_attributes(llvm::Function* fn, bool inline_always);
  /// Exports `f.name`__tessera_args: its argument count, then each
  /// argument's bytes, which the loader checks calls against (runtime/c_abi.h).
  void add_argument_sizes(const PrimFunc& f);
  llvm::Value* emit(const Expr& e);
  llvm::Value* emit_binary(const BinaryNode* op);
  llvm::Value* emit_cast(DType to, llvm::Value* v, DType from);
  llvm::Value* emit_call(const CallNode* op);
  /// A chain of selects on lane-uniform conditions (a concatenation of many
  /// inputs), emitted as branches: only the taken value is computed.
  bool is_uniform_chain(const SelectNode* n);
  llvm::Value* emit_select_chain(const SelectNode* n);
  /// exp, log and tanh of a float32 vector, polynomials in straight-line code
  /// (llvm_math.cc); libm stays for scalars.
  llvm::Value* emit_vector_exp(llvm::Value* x);
  llvm::Value* emit_vector_log(llvm::Value* x);
  llvm::Value* emit_vector_tanh(llvm::Value* x);
  /// acc + dot_u8s8(a, b) (acc null: 0), by the target's dot-product
  /// instruction where it has one for these lanes (llvm_dot.cc).
  llvm::Value* emit_dot_u8s8(llvm::Value* acc, const CallNode* dot);
  /// acc + dot0 + dot1, two u8 x s8 dot products (matmul_u8s8_pairs's eight
  /// bytes): with AArch64's +i8mm, where every four lanes are a 2 x 2 tile
  /// (dot0 and dot1's first operands equal across each tile's columns, their
  /// second across its rows), one USMMLA a tile; else the two chained
  /// (llvm_dot.cc).
  llvm::Value* emit_dot_pair(llvm::Value* acc, const CallNode* dot0, const CallNode* dot1);
  /// The lanes of int32 a native u8 x s8 dot-product instruction covers,
  /// widest first: 16 for AVX512-VNNI on 512-bit vectors, 8 and 4 with
  /// AVX-VNNI or AVX512-VL, 4 for AArch64's USDOT (+i8mm) or SDOT
  /// (+dotprod); none without one.
  const std::vector<int>& dot_widths();
  /// acc + dot_bf16(a, b) (acc null: 0), by the target's bfloat16
  /// dot-product instruction where it has one for these lanes (llvm_dot.cc).
  llvm::Value* emit_dot_bf16(llvm::Value* acc, const CallNode* dot);
  /// The same for bfloat16 (float32 lanes): 16 for AVX512-BF16 on 512-bit
  /// vectors, 8 and 4 with AVX512-VL too, 4 for AArch64's BFDOT (+bf16).
  const std::vector<int>& bf16_dot_widths();
  /// acc + dot(a, b) over `lanes` lanes as calls of `one` on `width` lanes
  /// each (slices of acc, a and b), joined (llvm_dot.cc).
  llvm::Value* emit_dot_parts(int lanes, int width, llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                              const std::function<llvm::Value*(llvm::Value*, llvm::Value*, llvm::Value*)>& one);
  /// pack_bf16(lo, hi): one load of the words where lo and hi are loads of
  /// neighbouring bfloat16 elements, else rounded and packed (llvm_dot.cc).
  llvm::Value* emit_pack_bf16(const CallNode* pack);
  /// AArch64's four-lane u8 x s8 dot product (llvm_dot.cc).
  llvm::Value* emit_aarch64_dot(llvm::Value* acc, llvm::Value* a, llvm::Value* b);
  llvm::Value* emit_load(const LoadNode* op);
  llvm::Value* per_lane(llvm::Value* v, DType t, const char* fn_name);
  void emit(const Stmt& s);
  void emit_store(const StoreNode* op);
  llvm::Value* emit_masked_load(const LoadNode* op);
  llvm::Value* emit_strided_load(const LoadNode* op, llvm::Value* mask);
  llvm::Value* emit_segmented_load(const LoadNode* op);
  void emit_masked_store(const StoreNode* op, llvm::Value* value);
  void emit_for(const ForNode* op);
  /// A serial loop of 4, 8 or 16 steps whose one store reads, at each step,
  /// a vector across input rows (a transpose's tile): the rows' block loaded
  /// whole and transposed by shuffles, then the steps unrolled on its
  /// columns (llvm_transpose.cc). False, with nothing emitted, for any other
  /// loop.
  bool emit_transposed_tile(const ForNode* op);
  /// A kTensorized loop's nest as tile products on AMX (llvm_tile.cc); an
  /// error recorded where the nest is not one or the target has no unit.
  void emit_tensorized(const ForNode* op, bool zero_c = false);
  /// `init` a nest that stores zeros to exactly the C a tensorized `next`
  /// accumulates into: both emitted as the tile product from zeroed tiles
  /// (no stores of zeros, no loads of C). False, with nothing emitted, for
  /// any other pair (llvm_tile.cc).
  bool emit_zeroed_tile_product(const Stmt& init, const Stmt& next);
  /// Exports runtime/c_abi.h's TESSERA_TILE_MODULE_SYMBOL, once a module.
  void mark_tile_module();
  /// The tile configuration loaded in the current function's entry block,
  /// once; release_tiles, where a kernel returns, releases it (llvm_tile.cc).
  void configure_tiles();
  void release_tiles();
  /// The module's tile configuration for C and A tiles of `rows` rows
  /// (llvm_tile.cc), and a load of it here.
  llvm::GlobalVariable* tile_config_global(int64_t rows);
  void load_tile_config(int64_t rows);
  /// body(i) for i = 0 .. extent - 1 (extent >= 1), an i64 counter, as a
  /// loop of blocks here (llvm_tile.cc).
  void emit_counted_loop(int64_t extent, const std::string& name, const std::function<void(llvm::Value*)>& body);
  void emit_serial_loop(const Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body);
  void emit_parallel(const ForNode* op);
  void emit_allocate(const AllocateNode* op);
  llvm::Value* element_ptr(const Buffer& buf, llvm::Value* index);
  /// Inside a Select's branches, an index clamped into the buffer.
  llvm::Value* clamp_index(const Buffer& buf, llvm::Value* index);
  // i1 per lane: the element index `lanes` (n of them) lies inside `buf`.
  llvm::Value* lanes_in_buffer(const Buffer& buf, llvm::Value* lanes, int n);
  // Inside a Select's branches: a load of n lanes at element index `index`,
  // spanning `span` elements from *ptr, reads only what its branches keep
  // (where their conditions hold the program reads inside its buffers). A
  // condition per lane joins *mask (null: every lane); one the same for
  // every lane moves *ptr to the buffer's start when it fails, so the load
  // needs no mask; a condition whose lanes do not line up with the load's
  // leaves *mask to the lanes inside `buf`.
  void guard_branch_load(const Buffer& buf, const Expr& index, int n, int64_t span, llvm::Value** ptr,
                         llvm::Value** mask);
  llvm::Value* splat(llvm::Value* v, int lanes) { return b_.CreateVectorSplat(lanes, v); }
  void return_if_error(llvm::Value* status);
  /// The value of a loop variable, or (with an error recorded) poison.
  llvm::Value* var_value(const VarNode* var);
  /// The base pointer of a parameter or allocated buffer, or (with an error
  /// recorded) a null pointer.
  llvm::Value* buffer_base(const BufferNode* buf);
  /// Records the first node that cannot be emitted; emission goes on with a
  /// placeholder and add_function returns the error.
  llvm::Value* unsupported(const std::string& why, llvm::Type* type);

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  const Target& target_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::string base_name_;
  int outlined_ = 0;
  std::unordered_map<const VarNode*, llvm::Value*> vars_;
  std::unordered_map<const BufferNode*, llvm::Value*> buffers_;
  int parallel_depth_ = 0;
  int select_depth_ = 0;                                          // > 0 while emitting the branches of a Select
  std::optional<std::vector<int>> dot_widths_, bf16_dot_widths_;  // once asked
  // The condition of each Select branch being emitted, outermost first (the
  // negation for a false branch): i1 when the same for every lane, else one
  // i1 per lane.
  std::vector<llvm::Value*> branch_conds_;
  Status error_;                                        // the first node that could not be emitted
  std::unordered_set<llvm::Function*> tile_functions_;  // those that configure AMX tiles
};

}  // namespace tessera::codegen_detail
