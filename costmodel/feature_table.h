// The feature table: every feature listed once with how it is folded over
// the stores of a program, how it is scaled, and its one-line meaning.
// Internal to costmodel/ (features.cc and the tests); the public view is
// feature_names().
//
// Columns: name, aggregation over stores (kSum: total over the program;
// kMean: mean weighted by each store's share of executed work), scale (kLog:
// log2(1 + x); kSignedLog: sign(x) log2(1 + |x|); kRaw: as is), meaning.
#pragma once

namespace tessera::costmodel {

enum class Agg : unsigned char { kSum, kMean };
enum class Scale : unsigned char { kLog, kSignedLog, kRaw };

// "Executions" below are scalar executions: a vector op over 16 lanes that
// runs 10 times counts 160, so op counts do not depend on vectorization.
#define TESSERA_PROGRAM_FEATURES(X)                                                               \
  X(num_stores, kSum, kLog, "store statements in the lowered program")                            \
  X(total_flops, kSum, kLog, "float ops executed by the whole program (a multiply-add counts 2)") \
  X(total_executions, kSum, kLog, "scalar store executions of the whole program")                 \
  X(max_depth, kSum, kRaw, "deepest loop nest around a store")                                    \
  X(dominant_share, kSum, kRaw, "share of all store executions done by the busiest store")        \
  X(num_allocs, kSum, kRaw, "Allocate statements (local or workspace buffers)")                   \
  X(alloc_bytes, kSum, kLog, "bytes of all Allocate statements, each counted once")               \
  X(compulsory_ai, kSum, kLog, "total_flops / bytes of all kernel parameters")

#define TESSERA_STORE_FEATURES(X)                                                                                    \
  X(float_mad, kSum, kLog, "float multiply-adds a*b+c executed (scalar lanes)")                                      \
  X(float_addsub, kSum, kLog, "float adds and subtracts executed, outside multiply-adds")                            \
  X(float_mul, kSum, kLog, "float multiplies executed, outside multiply-adds")                                       \
  X(float_divmod, kSum, kLog, "float divisions and modulos executed")                                                \
  X(float_minmax, kSum, kLog, "float min and max executed")                                                          \
  X(float_cmp, kSum, kLog, "float comparisons executed")                                                             \
  X(float_math, kSum, kLog, "math calls executed (exp, log, sqrt, tanh, ...)")                                       \
  X(dot_mad, kSum, kLog, "multiply-adds of packed dot products (4 a lane of u8 x s8, 2 of bfloat16)")                \
  X(int_addsub, kSum, kLog, "integer adds and subtracts executed (index arithmetic included)")                       \
  X(int_mul, kSum, kLog, "integer multiplies executed")                                                              \
  X(int_divmod, kSum, kLog, "integer divisions and modulos executed")                                                \
  X(int_minmax, kSum, kLog, "integer min and max executed")                                                          \
  X(int_cmp, kSum, kLog, "integer comparisons executed")                                                             \
  X(bool_op, kSum, kLog, "logical and/or/not executed")                                                              \
  X(select_op, kSum, kLog, "selects executed")                                                                       \
  X(cast_op, kSum, kLog, "casts executed")                                                                           \
  X(vec_lanes, kMean, kLog, "lanes of the stored value (1 when scalar)")                                             \
  X(vec_op_frac, kMean, kRaw, "share of the store's ops that run as vector ops")                                     \
  X(vec_strided, kMean, kRaw, "share of vector accesses whose lanes are not adjacent (gathers)")                     \
  X(par_num, kMean, kRaw, "parallel loops around the store")                                                         \
  X(par_prod, kMean, kLog, "product of the parallel loops' extents")                                                 \
  X(par_inner_len, kMean, kLog, "extent of the innermost parallel loop")                                             \
  X(par_inner_depth, kMean, kRaw, "depth of the innermost parallel loop (0 = outermost loop)")                       \
  X(par_outer_len, kMean, kLog, "extent of the outermost parallel loop")                                             \
  X(par_outer_depth, kMean, kRaw, "depth of the outermost parallel loop")                                            \
  X(par_task_work, kMean, kLog, "store executions per parallel iteration (all when not parallel)")                   \
  X(unroll_num, kMean, kRaw, "unrolled loops around the store")                                                      \
  X(unroll_prod, kMean, kLog, "product of the unrolled loops' extents")                                              \
  X(unroll_inner_len, kMean, kLog, "extent of the innermost unrolled loop")                                          \
  X(unroll_inner_depth, kMean, kRaw, "depth of the innermost unrolled loop")                                         \
  X(unroll_outer_len, kMean, kLog, "extent of the outermost unrolled loop")                                          \
  X(unroll_outer_depth, kMean, kRaw, "depth of the outermost unrolled loop")                                         \
  X(serial_num, kMean, kRaw, "serial loops around the store")                                                        \
  X(tensor_num, kMean, kRaw, "loops around the store that a matrix unit runs as tile products (a tensorized nest)")  \
  X(tensor_prod, kMean, kLog, "product of those loops' extents: the work of one tensorized nest")                    \
  X(innermost_len, kMean, kLog, "extent of the innermost loop around the store")                                     \
  X(innermost_unrolled, kMean, kRaw, "1 when the innermost loop is unrolled")                                        \
  X(depth, kMean, kRaw, "loops around the store")                                                                    \
  X(outer_prod, kSum, kLog, "product of all loop extents around the store (its executions)")                         \
  X(auto_unroll_max_step, kMean, kLog, "auto-unroll limit in force at the store (0: none)")                          \
  X(auto_unrolled_num, kMean, kRaw, "serial loops around the store that the auto-unroll limit unrolls")              \
  X(unrolled_copies, kMean, kLog, "copies of the store in the final code (product of all unrolled loops)")           \
  X(loop_inner_len, kMean, kLog, "extent of the innermost loop that stays a loop after unrolling")                   \
  X(loop_inner_body, kMean, kLog, "copies of the store in the body of that loop (its straight-line work)")           \
  X(guarded, kMean, kRaw, "1 when the store sits under a condition (non-dividing split)")                            \
  X(num_accesses, kMean, kRaw, "loads plus the store itself")                                                        \
  X(num_buffers, kMean, kRaw, "distinct buffers the store touches")                                                  \
  X(alloc_bytes, kMean, kLog, "bytes of the stored buffer when it is allocated locally, else 0")                     \
  X(alloc_outer_prod, kMean, kLog, "how many times that allocation runs (loops outside it)")                         \
  X(writes_local, kMean, kRaw, "1 when the stored buffer is local or workspace")                                     \
  X(out_region_1, kMean, kLog, "elements of the output written by the innermost loop (and lanes)")                   \
  X(out_region_2, kMean, kLog, "elements of the output written by the two innermost loops")                          \
  X(out_region_all, kMean, kLog, "elements of the output written by the whole nest")                                 \
  X(ai_1, kMean, kLog, "flops / unique bytes touched inside the innermost loop")                                     \
  X(ai_2, kMean, kLog, "flops / unique bytes touched inside the two innermost loops")                                \
  X(ai_3, kMean, kLog, "flops / unique bytes touched inside the three innermost loops")                              \
  X(ai_all, kMean, kLog, "flops / unique bytes touched by the whole nest")                                           \
  X(total_bytes, kSum, kLog, "bytes accessed by the store's loads and store, repeats included")                      \
  X(total_lines, kSum, kLog, "cache lines accessed, counting a line again in each outer iteration")                  \
  X(total_unique_lines, kSum, kLog, "distinct cache lines accessed over the whole nest")                             \
  X(acc_distance, kMean, kLog, "for an update C = C + ...: loop iterations between two updates of one element")      \
  X(min_reuse_bytes, kMean, kLog, "smallest loop-carried reuse distance in bytes among the accesses")                \
  X(l1_misses, kSum, kLog, "cache lines fetched with a 32 KiB cache: loops keep reuse while their working set fits") \
  X(l2_misses, kSum, kLog, "cache lines fetched with a 1 MiB cache, by the same model")

// Per buffer slot (the kMaxBuffers buffers with most bytes, largest first).
#define TESSERA_BUFFER_FEATURES(X)                                                                     \
  X(is_read, kMean, kRaw, "1 when the buffer is only read")                                            \
  X(is_write, kMean, kRaw, "1 when the buffer is only written")                                        \
  X(is_read_write, kMean, kRaw, "1 when the buffer is read and written")                               \
  X(is_local, kMean, kRaw, "1 when the buffer is local or workspace memory")                           \
  X(bytes, kMean, kLog, "bytes accessed, repeats included")                                            \
  X(unique_bytes, kMean, kLog, "distinct bytes accessed over the whole nest")                          \
  X(lines, kMean, kLog, "cache lines accessed, counting a line again in each outer iteration")         \
  X(unique_lines, kMean, kLog, "distinct cache lines accessed over the whole nest")                    \
  X(reuse_loop, kMean, kRaw, "1 when a loop leaves the address unchanged (loop-carried reuse)")        \
  X(reuse_serial, kMean, kRaw, "1 when reused only by several accesses in the same statement")         \
  X(reuse_none, kMean, kRaw, "1 when not reused")                                                      \
  X(reuse_dis_iter, kMean, kLog, "iterations between reuses (product of loops inside the reuse loop)") \
  X(reuse_dis_bytes, kMean, kLog, "bytes all accesses touch between reuses")                           \
  X(reuse_ct, kMean, kLog, "times the data is reused (extent of the reuse loop)")                      \
  X(stride, kMean, kSignedLog, "elements the address moves per step of the innermost loop or lane")    \
  X(stride_moving, kMean, kSignedLog, "that stride for the innermost loop that moves the address")     \
  X(bytes_d_reuse_ct, kMean, kLog, "bytes / reuse_ct")

}  // namespace tessera::costmodel
