// `tessera space --dump-after PASS`: the IR (or plan) after one lowering pass.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/tools/command.h"

namespace {

using tessera::test::Output;
using tessera::test::tessera;

const char* const kOp = "--op matmul:M=6,N=4,K=3 --samples 1";

TEST(SpaceCommand, DumpAfterAnIrPassPrintsThatKernel) {
  Output out = tessera(std::string("space ") + kOp + " --dump-after build_loop_nests");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("after build_loop_nests:\nfunc kernel("), std::string::npos) << out.text;
  // Reads are still tensor reads, in global coordinates (the tensor A prints
  // as A_1 beside the buffer A).
  EXPECT_NE(out.text.find("A_1["), std::string::npos) << out.text;
}

TEST(SpaceCommand, DumpAfterAScheduleLevelPassPrintsThePlan) {
  Output out = tessera(std::string("space ") + kOp + " --dump-after infer_bounds");
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("after infer_bounds:\nstage A: placeholder, region [0 +6, 0 +3]"), std::string::npos)
      << out.text;
}

TEST(SpaceCommand, UnknownPassIsAUsageErrorListingThePasses) {
  Output out = tessera(std::string("space ") + kOp + " --dump-after vectorise");
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("unknown --dump-after pass 'vectorise'"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("inline_stages, infer_bounds, allocate_buffers, place_guards, build_loop_nests, "
                          "flatten_storage, simplify, partition_loops, vectorize_loops, unroll_loops"),
            std::string::npos)
      << out.text;
}

}  // namespace
