// Helpers of the integer-kernel tests: int32 words in the harness's 4-byte
// element buffers, uint8 tensors in them, the host with its dot-product
// instruction turned off, counting an instruction in assembly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_codegen.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/lower/lower.h"
#include "compiler/ops/op_spec.h"
#include "compiler/schedule/layout.h"
#include "compiler/space/knob/templates.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"

namespace tessera::test {

/// The words of `v` as the float vectors the test harness stores 4-byte
/// elements in, and back.
inline std::vector<float> as_storage(const std::vector<int32_t>& v) {
  std::vector<float> s(v.size());
  std::memcpy(s.data(), v.data(), v.size() * 4);
  return s;
}
inline std::vector<int32_t> as_words(const std::vector<float>& s) {
  std::vector<int32_t> v(s.size());
  std::memcpy(v.data(), s.data(), s.size() * 4);
  return v;
}

/// uint8 elements at the start of a harness buffer of one 4-byte slot per
/// element (a kernel reads the first bytes only).
inline std::vector<float> bytes_storage(const std::vector<uint8_t>& v) {
  std::vector<float> s(v.size(), 0.0f);
  std::memcpy(s.data(), v.data(), v.size());
  return s;
}

/// The host with its dot-product instructions turned off: VNNI, and AMX's
/// tile products.
inline Target host_without_vnni() {
  Target t = host_target();
  t.features.push_back("-avx512vnni");
  t.features.push_back("-avxvnni");
  t.features.push_back("-amx-tile");
  t.amx_int8 = t.amx_bf16 = false;
  return t;
}

// An M x K uint8 and a K x N int8 matrix, packed four bytes of K to a word as
// matmul_u8s8 reads them (A also as its bytes, as a model's activations
// are), and their product in int32.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int32_t> a, b, product;
  std::vector<uint8_t> a_bytes;
};

inline Problem random_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  // The extremes appear often: 255 x -128 is the largest product.
  auto draw = [&](int lo, int hi) {
    const int r = byte(rng);
    return r < 40 ? lo : r < 80 ? hi : lo + byte(rng) % (hi - lo + 1);
  };
  std::vector<uint8_t> a(static_cast<size_t>(m * k));
  std::vector<int8_t> b(static_cast<size_t>(k * n));
  for (auto& v : a) v = static_cast<uint8_t>(draw(0, 255));
  for (auto& v : b) v = static_cast<int8_t>(draw(-128, 127));
  Problem p{m,
            n,
            k,
            std::vector<int32_t>(static_cast<size_t>(m * k / 4)),
            std::vector<int32_t>(static_cast<size_t>(k / 4 * n)),
            std::vector<int32_t>(static_cast<size_t>(m * n)),
            a};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k / 4; ++q)
      std::memcpy(&p.a[static_cast<size_t>(i * (k / 4) + q)], &a[static_cast<size_t>(i * k + 4 * q)], 4);
  for (int64_t q = 0; q < k / 4; ++q)
    for (int64_t j = 0; j < n; ++j) {
      uint8_t word[4];
      for (int r = 0; r < 4; ++r) word[r] = static_cast<uint8_t>(b[static_cast<size_t>((4 * q + r) * n + j)]);
      std::memcpy(&p.b[static_cast<size_t>(q * n + j)], word, 4);
    }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s += int64_t{a[static_cast<size_t>(i * k + kk)]} * b[static_cast<size_t>(kk * n + j)];
      p.product[static_cast<size_t>(i * n + j)] = static_cast<int32_t>(s);
    }
  return p;
}

inline std::string spec_of(const Problem& p) {
  return "matmul_u8s8:M=" + std::to_string(p.m) + ",N=" + std::to_string(p.n) + ",K=" + std::to_string(p.k);
}

/// Argument `arg` of `state` as the kernel stores it: `data` (its elements
/// in C order over the argument's shape) packed where the schedule packs it
/// (compiler/schedule/layout.h), else as it is.
template <typename T>
std::vector<T> stored(const State& state, int arg, const std::vector<T>& data) {
  const Tensor& t = state.dag().args()[static_cast<size_t>(arg)];
  const std::optional<PackedLayout>& layout = state.stage(state.stage_index(t)).layout;
  if (!layout) return data;
  size_t elements = 1;
  for (int64_t d : packed_shape(t->shape, *layout)) elements *= static_cast<size_t>(d);
  std::vector<T> packed(elements);
  pack_elements(data.data(), packed.data(), t->shape, sizeof(T), *layout);
  return packed;
}

/// Builds `state` for `target` and calls it on `args` (its buffers in
/// argument order, packed where the schedule packs them) on two threads.
inline Status run_built(const State& state, const Target& target, std::vector<void*> args) {
  TESSERA_ASSIGN_OR_RETURN(BuiltLibrary lib, build(state, target, "kernel"));
  TESSERA_ASSIGN_OR_RETURN(runtime::Module mod, runtime::Module::load_from_bytes(lib.bytes, "/tmp"));
  TESSERA_ASSIGN_OR_RETURN(TesseraKernelFn fn, mod.get_kernel("kernel"));
  runtime::ThreadPool pool(2);
  runtime::ParallelScope scope(&pool);
  if (int32_t status = fn(args.data()); status != 0)
    return Status(ErrorCode::kRuntimeError, "kernel returned " + std::to_string(status));
  return Status::ok();
}

/// How often `what` appears in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The DAG of operator spec `spec` ("matmul_u8s8:M=64,N=64,K=256").
inline std::shared_ptr<const ComputeDAG> dag_of_spec(const std::string& spec) {
  auto inst = ops::parse_op_spec(spec);
  EXPECT_TRUE(inst.is_ok()) << inst.status().to_string();
  return inst.is_ok() ? inst->dag : nullptr;
}

/// The fallback schedule of `spec`'s template on `target`.
inline State template_fallback_of(const std::string& spec, const Target& target) {
  const std::string op = spec.substr(0, spec.find(':'));
  const KnobTemplate* t = find_template(op);
  EXPECT_NE(t, nullptr) << op;
  auto state = apply_fallback(*t, dag_of_spec(spec), target);
  EXPECT_TRUE(state.is_ok()) << state.status().to_string();
  return std::move(state).value();
}

/// The assembly of `spec`'s template fallback on the target `target_text`.
inline std::string fallback_assembly_of(const std::string& spec, const std::string& target_text) {
  auto target = parse_target(target_text);
  EXPECT_TRUE(target.is_ok()) << target.status().to_string();
  if (!target.is_ok()) return "";
  auto f = lower(template_fallback_of(spec, *target), "kernel");
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return "";
  auto text = emit_assembly({*f}, *target);
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  return text.is_ok() ? *text : "";
}

}  // namespace tessera::test
