#include "costmodel/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::costmodel {
namespace {

std::vector<std::vector<float>> rows(size_t n, size_t width) {
  std::vector<std::vector<float>> out(n, std::vector<float>(width));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < width; ++j) out[i][j] = static_cast<float>(i * width + j);
  return out;
}

TEST(RandomModel, SameSeedGivesSameScores) {
  RandomModel a(42), b(42), c(43);
  auto x = rows(20, 4);
  auto pa = a.predict(x), pb = b.predict(x), pc = c.predict(x);
  ASSERT_TRUE(pa.is_ok() && pb.is_ok() && pc.is_ok());
  EXPECT_EQ(*pa, *pb);
  EXPECT_NE(*pa, *pc);
  for (double s : *pa) {
    EXPECT_GE(s, 0.0);
    EXPECT_LT(s, 1.0);
  }
}

TEST(RandomModel, UpdateChecksTheBatchAndLearnsNothing) {
  RandomModel m(1), fresh(1);
  EXPECT_TRUE(m.update(rows(3, 2), {0.1, 0.5, 1.0}).is_ok());
  EXPECT_EQ(m.predict(rows(5, 2)).value(), fresh.predict(rows(5, 2)).value());
  Status st = m.update(rows(3, 2), {0.1, 0.5});
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
}

TEST(CheckBatch, RejectsMismatchedOrNonFiniteInput) {
  auto x = rows(2, 3);
  EXPECT_TRUE(check_batch(x, {0.5, 1.0}, nullptr, 0, "t").is_ok());
  EXPECT_EQ(check_batch(x, {0.5}, nullptr, 0, "t").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_batch(x, {0.5, -1.0}, nullptr, 0, "t").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_batch(x, {0.5, NAN}, nullptr, 0, "t").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(check_batch(x, {0.5, 1.0}, nullptr, 4, "t").code(), ErrorCode::kInvalidArgument);
  std::vector<int64_t> groups = {1};
  EXPECT_EQ(check_batch(x, {0.5, 1.0}, &groups, 0, "t").code(), ErrorCode::kInvalidArgument);
  x[1][2] = INFINITY;
  Status st = check_features(x, 0, "t");
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not finite"), std::string::npos) << st.message();
  x[1] = {1.f};
  EXPECT_EQ(check_features(x, 0, "t").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::costmodel
