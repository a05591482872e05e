// Target::parse without LLVM: the options, the CPU and feature tables, and
// when two targets share schedules. (That the tables agree with LLVM is
// tests/compiler/codegen/target_test.cc.)
#include "base/target.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

const std::string kIcelake = "llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -num-cores=2";
const std::string kSapphire = "llvm -mtriple=x86_64-linux-gnu -mcpu=sapphirerapids -num-cores=2";
const std::string kHaswell = "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -num-cores=2";
const std::string kNeon = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon -num-cores=4";

Target parsed(const std::string& text) {
  Result<Target> t = Target::parse(text);
  EXPECT_TRUE(t.is_ok()) << text << ": " << t.status().to_string();
  return t.is_ok() ? *t : Target();
}

int bits(const std::string& text) {
  return parsed(text).vector_bits;
}

ErrorCode error_of(const std::string& text) {
  return Target::parse(text).status().code();
}

TEST(Target, ReadsTripleCpuFeaturesAndCores) {
  const Target t = parsed("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=+fma,-avx512f -num-cores=8");
  EXPECT_EQ(t.triple, "x86_64-linux-gnu");
  EXPECT_EQ(t.cpu, "haswell");
  EXPECT_EQ(t.features, (std::vector<std::string>{"+fma", "-avx512f"}));
  EXPECT_EQ(t.num_cores, 8);
  EXPECT_TRUE(t.is_x86());
  EXPECT_TRUE(t.has_feature("fma"));
  EXPECT_FALSE(t.has_feature("avx512f"));
  EXPECT_EQ(parsed("llvm -mtriple=x86_64-linux-gnu").cpu, "generic");
}

TEST(Target, VectorWidthFromCpuAndFeatures) {
  EXPECT_EQ(bits(kIcelake), 512);
  EXPECT_EQ(bits(kHaswell), 256);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu"), 128);  // x86-64 baseline: SSE2
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mattr=+avx2"), 256);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mattr=+fma"), 256);       // FMA implies AVX
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mattr=+avx512bw"), 512);  // implies AVX-512F
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=rocketlake -mattr=+avx512f"), 512);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -mattr=-avx512f"), 256);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -mattr=-avx2"), 256);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -mattr=-avx512bw"), 512);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=-avx"), 128);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=-sse4.1"), 128);
  // In order, as LLVM applies them: the later feature wins.
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -mattr=-avx512f,+avx512bw"), 512);
  EXPECT_EQ(bits("llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server -mattr=+avx512bw,-fma"), 256);
  EXPECT_EQ(bits(kNeon), 128);
  EXPECT_EQ(bits("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1"), 128);
}

TEST(Target, CacheSizesAndDefaultCoresByArchitecture) {
  const Target neon = parsed("llvm -mtriple=aarch64-linux-gnu");
  EXPECT_EQ(neon.num_cores, 4);
  EXPECT_EQ(neon.l1_bytes, 32 * 1024);
  EXPECT_EQ(neon.l2_bytes, 1024 * 1024);
  EXPECT_EQ(neon.l3_bytes, 16 * 1024 * 1024);
  EXPECT_GE(parsed("llvm -mtriple=x86_64-linux-gnu").num_cores, 1);
}

TEST(Target, UnknownCpuIsATargetError) {
  const Result<Target> t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=futurelake");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kTargetError);
  EXPECT_NE(t.status().message().find("futurelake"), std::string::npos);
  // -mattr does not make up for an unknown CPU.
  EXPECT_EQ(error_of("llvm -mtriple=x86_64-linux-gnu -mcpu=futurelake -mattr=+avx512f"), ErrorCode::kTargetError);
  // CPU names are per architecture.
  EXPECT_EQ(error_of("llvm -mtriple=aarch64-linux-gnu -mcpu=haswell"), ErrorCode::kTargetError);
}

TEST(Target, GarbageIsATargetError) {
  EXPECT_EQ(error_of("cuda"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -mtriple=sparc-sun-solaris"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -mtriple=riscv64-linux-gnu"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -frobnicate=1"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -mcpu"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -num-cores=zero"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -num-cores=0"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -mattr=avx2"), ErrorCode::kTargetError);
}

// A typo of a core count is refused when it is typed, not ten seconds into
// a tuning run that cannot launch that many tasks.
TEST(Target, ImplausibleCoreCountIsATargetError) {
  EXPECT_EQ(error_of("llvm -num-cores=999999"), ErrorCode::kTargetError);
  EXPECT_EQ(error_of("llvm -num-cores=1025"), ErrorCode::kTargetError);
  EXPECT_EQ(parsed("llvm -num-cores=1024").num_cores, 1024);
  auto t = Target::parse("llvm -num-cores=999999");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("more than 1024"), std::string::npos) << t.status().message();
}

TEST(Target, RoundTripsThroughItsString) {
  for (const std::string& text : {kIcelake, kNeon, std::string("llvm -mcpu=generic -num-cores=3"),
                                  std::string("llvm -mtriple=x86_64-linux-gnu -mattr=+avx2,-fma -num-cores=1")}) {
    const Target t = parsed(text);
    const Target again = parsed(t.to_string());
    EXPECT_EQ(again.to_string(), t.to_string());
    EXPECT_EQ(again.vector_bits, t.vector_bits);
  }
  EXPECT_EQ(parsed(kIcelake).to_string(), kIcelake);
}

TEST(Target, NoTripleMeansThisMachinesArchitecture) {
  const Target t = parsed("llvm -num-cores=2");
  EXPECT_EQ(t.triple, "");
  EXPECT_EQ(t.to_string(), "llvm -num-cores=2");
#if defined(__x86_64__)
  EXPECT_TRUE(t.is_x86());
  EXPECT_EQ(bits("llvm -mcpu=icelake-server"), 512);
#endif
}

TEST(Target, SharesSchedulesOnSameTripleAndVectorWidth) {
  EXPECT_TRUE(parsed(kIcelake).shares_schedules_with(parsed(kSapphire)));
  EXPECT_TRUE(parsed(kIcelake).shares_schedules_with(parsed(kIcelake + " -num-cores=64")));
  EXPECT_FALSE(parsed(kIcelake).shares_schedules_with(parsed(kHaswell)));
  EXPECT_FALSE(parsed(kIcelake).shares_schedules_with(parsed(kNeon)));
  EXPECT_FALSE(parsed("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell")
                   .shares_schedules_with(parsed("llvm -mtriple=x86_64-apple-darwin -mcpu=haswell")));
  // Without a triple nothing is known to match: the machine that reads the
  // string may not be the one that wrote it.
  const Target no_triple = parsed("llvm -mcpu=icelake-server");
  EXPECT_FALSE(no_triple.shares_schedules_with(no_triple));
}

TEST(Target, VectorLanesFillOneRegister) {
  EXPECT_EQ(parsed(kIcelake).vector_lanes(DType::f32()), 16);
  EXPECT_EQ(parsed(kNeon).vector_lanes(DType::f32()), 4);
  EXPECT_EQ(parsed(kNeon).vector_lanes(DType::i8()), 16);
}

}  // namespace
}  // namespace tessera
