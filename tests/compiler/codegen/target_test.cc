// The LLVM side of targets: base/target.h's tables agree with LLVM 19 for
// every CPU and every x86 feature, user-typed targets are checked by LLVM,
// and this machine's target parses.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/codegen/llvm_target.h"

namespace tessera {
namespace {

const std::vector<std::string> kTriples = {"x86_64-linux-gnu", "aarch64-linux-gnu"};

Target target_of(const std::string& text) {
  Result<Target> t = Target::parse(text);
  EXPECT_TRUE(t.is_ok()) << text << ": " << t.status().to_string();
  return t.is_ok() ? *t : Target();
}

TEST(TargetTables, EveryLlvmCpuIsListedWithLlvmsVectorWidth) {
  for (const std::string& triple : kTriples) {
    const std::vector<std::string> cpus = llvm_cpu_names(triple);
    ASSERT_GT(cpus.size(), 10u) << triple;
    for (const std::string& cpu : cpus) {
      const Target t = target_of("llvm -mtriple=" + triple + " -mcpu=" + cpu);
      EXPECT_TRUE(check_target(t).is_ok()) << check_target(t).to_string();
    }
  }
}

TEST(TargetTables, EveryListedCpuIsKnownToLlvm) {
  namespace tt = target_tables;
  const std::vector<std::string> x86 = llvm_cpu_names("x86_64-linux-gnu");
  const std::vector<std::string> arm = llvm_cpu_names("aarch64-linux-gnu");
  auto known = [](const std::vector<std::string>& names, std::string_view cpu) {
    return std::find(names.begin(), names.end(), cpu) != names.end();
  };
  for (std::string_view cpu : tt::kX86Cpus512) EXPECT_TRUE(known(x86, cpu)) << cpu;
  for (std::string_view cpu : tt::kX86CpusAmx) EXPECT_TRUE(known(x86, cpu)) << cpu;
  for (std::string_view cpu : tt::kX86Cpus256) EXPECT_TRUE(known(x86, cpu)) << cpu;
  for (std::string_view cpu : tt::kX86Cpus128) EXPECT_TRUE(known(x86, cpu)) << cpu;
  for (std::string_view cpu : tt::kAarch64Cpus) EXPECT_TRUE(known(arm, cpu)) << cpu;
}

TEST(TargetTables, EveryX86FeatureMovesTheVectorWidthAsInLlvm) {
  const std::vector<std::string> features = llvm_feature_names("x86_64-linux-gnu");
  ASSERT_GT(features.size(), 50u);
  for (const std::string cpu : {"generic", "haswell", "skylake-avx512"}) {
    for (const std::string& name : features) {
      for (const std::string sign : {"+", "-"}) {
        const Target t = target_of("llvm -mtriple=x86_64-linux-gnu -mcpu=" + cpu + " -mattr=" + sign + name);
        Result<int> llvm_bits = llvm_vector_bits(t);
        ASSERT_TRUE(llvm_bits.is_ok()) << llvm_bits.status().to_string();
        EXPECT_EQ(t.vector_bits, *llvm_bits) << cpu << " " << sign << name;
      }
    }
  }
}

// AMX's tile products: every CPU, then every feature on and off on a CPU
// with AMX and on one without.
TEST(TargetTables, EveryCpuAndX86FeatureGivesTheMatrixUnitAsInLlvm) {
  auto check = [](const Target& t, const std::string& what) {
    EXPECT_EQ(t.amx_int8, llvm_has_feature(t, "amx-int8")) << what;
    EXPECT_EQ(t.amx_bf16, llvm_has_feature(t, "amx-bf16")) << what;
  };
  for (const std::string& cpu : llvm_cpu_names("x86_64-linux-gnu"))
    check(target_of("llvm -mtriple=x86_64-linux-gnu -mcpu=" + cpu), cpu);
  for (const std::string cpu : {"sapphirerapids", "skylake-avx512"})
    for (const std::string& name : llvm_feature_names("x86_64-linux-gnu"))
      for (const std::string sign : {"+", "-"})
        check(target_of("llvm -mtriple=x86_64-linux-gnu -mcpu=" + cpu + " -mattr=" + sign + name),
              cpu + " " + sign + name);
}

TEST(ParseTarget, UnknownCpuIsAClearError) {
  const Result<Target> t = parse_target("llvm -mtriple=x86_64-linux-gnu -mcpu=notacpu");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kTargetError);
  EXPECT_NE(t.status().message().find("notacpu"), std::string::npos);
  EXPECT_EQ(parse_target("llvm -mtriple=sparc-sun-solaris").status().code(), ErrorCode::kTargetError);
}

TEST(ParseTarget, AnOmittedTripleIsLlvmsDefault) {
  const Result<Target> t = parse_target("llvm -num-cores=2");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_FALSE(t->triple.empty());
  EXPECT_EQ(t->triple, host_target().triple);
}

TEST(ParseTarget, CheckTargetRejectsAWidthLlvmDisagreesWith) {
  Target t = target_of("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  t.vector_bits = 512;
  EXPECT_EQ(check_target(t).code(), ErrorCode::kTargetError);
}

TEST(HostTarget, RoundTripsThroughItsString) {
  const Target host = host_target();
  EXPECT_FALSE(host.triple.empty());
  const Result<Target> again = parse_target(host.to_string());
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(again->to_string(), host.to_string());
  EXPECT_EQ(again->vector_bits, host.vector_bits);
}

}  // namespace
}  // namespace tessera
