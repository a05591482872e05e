// exp, log, tanh and sigmoid of float32 vectors (compiler/codegen/llvm_math.cc:
// polynomials, not a libm call a lane) against the double-precision
// functions over their whole range: within 2 ulp where the result is a
// normal float32, exact at the special values (0 and +inf beyond the range,
// ±1 for tanh, NaN kept), in full vectors and a tail.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "compiler/codegen/build.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/ir/op.h"
#include "runtime/module.h"

namespace tessera {
namespace {

// Builds out[i] = f(x[i]) with i vectorized by 16 and runs it on `x`.
std::vector<float> run(const std::function<Expr(Expr)>& f, std::vector<float> x) {
  const auto n = static_cast<int64_t>(x.size());
  Tensor in = placeholder({n}, DType::f32(), "X");
  Tensor out = compute(
      {n}, [&](const Vars& i) { return f(read(in, {i[0]})); }, "Out");
  State s(std::make_shared<const ComputeDAG>(ComputeDAG::make({in, out}).value()));
  EXPECT_TRUE(s.split(1, 0, {16}).is_ok());
  EXPECT_TRUE(s.vectorize(1, 1).is_ok());
  auto lib = build(s, host_target(), "kernel");
  EXPECT_TRUE(lib.is_ok()) << lib.status().to_string();
  auto mod = runtime::Module::load_from_bytes(lib->bytes, "/tmp");
  EXPECT_TRUE(mod.is_ok()) << mod.status().to_string();
  auto fn = mod->get_kernel("kernel");
  EXPECT_TRUE(fn.is_ok());
  std::vector<float> y(x.size(), -7.0f);
  std::vector<void*> args = {x.data(), y.data()};
  EXPECT_EQ((*fn)(args.data()), 0);
  return y;
}

// Every 0.01 of [-100, 100], the edges of exp's range, and the specials;
// 20,013 values, so the last vector is a tail.
std::vector<float> inputs() {
  std::vector<float> x;
  for (int k = -10000; k <= 10000; ++k) x.push_back(static_cast<float>(k) * 0.01f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {-87.3f, -87.4f, 88.7f, 88.73f, 1e-30f, -1e-30f, 3e-4f, 5e-4f, -0.0f, inf, -inf,
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  return x;
}

// |got - want| within `ulps` units in the last place of want, as a float32.
void expect_close(const std::vector<float>& x, const std::vector<float>& got, double (*want_of)(double), double ulps,
                  const char* what) {
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double want = want_of(x[i]);
    if (std::isnan(want)) {
      if (!std::isnan(got[i])) ++bad, ADD_FAILURE() << what << "(" << x[i] << ") = " << got[i] << ", not NaN";
      continue;
    }
    const auto wf = static_cast<float>(want);
    if (std::isinf(wf) || wf == 0.0f || std::fabs(wf) < std::numeric_limits<float>::min()) {
      // Beyond the range: +inf and 0 exactly; a denormal may flush to 0 or
      // keep the relative error of the division that made it.
      const bool denormal_ok = std::fabs(wf) < std::numeric_limits<float>::min() &&
                               (got[i] == 0.0f || std::fabs(got[i] - want) <= 1e-6 * std::fabs(want));
      if (!(got[i] == wf || denormal_ok))
        ++bad, ADD_FAILURE() << what << "(" << x[i] << ") = " << got[i] << ", want " << wf;
      continue;
    }
    const double ulp = std::nextafter(std::fabs(wf), std::numeric_limits<float>::infinity()) - std::fabs(wf);
    if (std::fabs(got[i] - want) > ulps * ulp)
      ++bad, ADD_FAILURE() << what << "(" << x[i] << ") = " << got[i] << ", want " << want << " ("
                           << std::fabs(got[i] - want) / ulp << " ulp)";
  }
}

TEST(VectorMath, ExpIsWithinTwoUlpOverItsRange) {
  const std::vector<float> x = inputs();
  expect_close(
      x, run([](Expr v) { return exp(v); }, x), [](double v) { return std::exp(v); }, 2.0, "exp");
}

// log over the inputs (NaN below 0, -inf at 0), then over every power of
// two's neighbourhood from the subnormals up (1e-45 to 3e38).
TEST(VectorMath, LogIsWithinTwoUlpFromSubnormalsToTheLargestFloat) {
  std::vector<float> x = inputs();
  for (double v = 1.5e-45; v < 3e38; v *= 1.37) x.push_back(static_cast<float>(v));
  for (float v : {1.0f, std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f), 0.70710677f, 0.70710683f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()})
    x.push_back(v);
  expect_close(
      x, run([](Expr v) { return log(v); }, x), [](double v) { return std::log(v); }, 2.0, "log");
}

TEST(VectorMath, TanhIsWithinAFewUlpAndSaturates) {
  const std::vector<float> x = inputs();
  expect_close(
      x, run([](Expr v) { return tanh(v); }, x), [](double v) { return std::tanh(v); }, 4.0, "tanh");
}

TEST(VectorMath, SigmoidIsWithinAFewUlp) {
  const std::vector<float> x = inputs();
  expect_close(
      x, run([](Expr v) { return sigmoid(v); }, x), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 4.0,
      "sigmoid");
}

}  // namespace
}  // namespace tessera
