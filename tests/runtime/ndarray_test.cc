#include "runtime/ndarray.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace tessera::runtime {
namespace {

TEST(NDArray, ShapeGivesNumelAndNbytes) {
  auto a = NDArray::create({2, 3, 4}, DType::f32());
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->ndim(), 3);
  EXPECT_EQ(a->numel(), 24);
  EXPECT_EQ(a->nbytes(), 96);
  EXPECT_EQ(a->describe(), "float32[2, 3, 4]");
  auto b = NDArray::create({5}, DType::boolean());
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->nbytes(), 5) << "a bool takes one byte";
}

TEST(NDArray, ScalarHasOneElement) {
  auto a = NDArray::create({}, DType::i64());
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->numel(), 1);
  EXPECT_EQ(a->nbytes(), 8);
}

TEST(NDArray, DataIsAlignedTo64BytesAndZeroed) {
  for (int64_t n : {0, 1, 3, 1000}) {
    auto a = NDArray::create({n}, DType::f32());
    ASSERT_TRUE(a.is_ok());
    ASSERT_NE(a->raw_data(), nullptr) << "even with no elements";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a->raw_data()) % NDArray::kAlignment, 0u);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a->data<float>()[i], 0.0f);
  }
}

TEST(NDArray, NegativeDimensionIsInvalidArgument) {
  auto a = NDArray::create({2, -1}, DType::f32());
  ASSERT_FALSE(a.is_ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("dimension 1"), std::string::npos) << a.status().message();
}

TEST(NDArray, OverflowingShapeIsInvalidArgument) {
  auto a = NDArray::create({int64_t{1} << 40, int64_t{1} << 40}, DType::f32());
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
}

TEST(NDArray, VectorAndHandleTypesAreInvalidArgument) {
  EXPECT_EQ(NDArray::create({4}, DType::f32(4)).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(NDArray::create({4}, DType::handle()).status().code(), ErrorCode::kInvalidArgument);
}

TEST(NDArray, FillRandomIsDeterministicAndInRange) {
  auto a = NDArray::create({4096}, DType::f32());
  auto b = NDArray::create({4096}, DType::f32());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  a->fill_random(42);
  b->fill_random(42);
  EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0);
  float low = 1, high = -1;
  double sum = 0;
  for (int i = 0; i < 4096; ++i) {
    const float v = a->data<float>()[i];
    ASSERT_GE(v, -1.0f);
    ASSERT_LE(v, 1.0f);
    low = std::min(low, v);
    high = std::max(high, v);
    sum += v;
  }
  EXPECT_LT(low, -0.9f) << "spread over the whole range";
  EXPECT_GT(high, 0.9f);
  EXPECT_NEAR(sum / 4096, 0.0, 0.05);
}

TEST(NDArray, FillRandomGivesTheSameValuesOnEveryPlatform) {
  // Pinned values, computed by an independent splitmix64 in numpy: a change
  // here changes every measured input and test expectation downstream.
  constexpr float kFirstThreeSeed1[] = {0.13312316f, 0.49156356f, 0.9420055f};
  auto a = NDArray::create({3}, DType::f32());
  ASSERT_TRUE(a.is_ok());
  a->fill_random(1);
  const float* v = a->data<float>();
  EXPECT_FLOAT_EQ(v[0], kFirstThreeSeed1[0]);
  EXPECT_FLOAT_EQ(v[1], kFirstThreeSeed1[1]);
  EXPECT_FLOAT_EQ(v[2], kFirstThreeSeed1[2]);
}

TEST(NDArray, DifferentSeedsGiveDifferentData) {
  auto a = NDArray::create({64}, DType::f32());
  auto b = NDArray::create({64}, DType::f32());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  a->fill_random(1);
  b->fill_random(2);
  EXPECT_NE(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0);
}

TEST(NDArray, FillRandomIntegersAreSmallAndBoolsAreZeroOrOne) {
  auto i = NDArray::create({1000}, DType::i32());
  auto u = NDArray::create({1000}, DType::u8());
  auto b = NDArray::create({1000}, DType::boolean());
  ASSERT_TRUE(i.is_ok() && u.is_ok() && b.is_ok());
  i->fill_random(3);
  u->fill_random(3);
  b->fill_random(3);
  bool saw_negative = false, saw_true = false, saw_false = false;
  for (int k = 0; k < 1000; ++k) {
    ASSERT_GE(i->data<int32_t>()[k], -64);
    ASSERT_LE(i->data<int32_t>()[k], 63);
    saw_negative |= i->data<int32_t>()[k] < 0;
    ASSERT_LE(u->data<uint8_t>()[k], 127);
    ASSERT_LE(b->data<uint8_t>()[k], 1);
    (b->data<uint8_t>()[k] ? saw_true : saw_false) = true;
  }
  EXPECT_TRUE(saw_negative);
  EXPECT_TRUE(saw_true && saw_false);
}

TEST(NDArray, FillRandomHalfPrecisionStaysInRange) {
  auto h = NDArray::create({256}, DType::f16());
  ASSERT_TRUE(h.is_ok());
  h->fill_random(5);
  for (int k = 0; k < 256; ++k) {
    const uint16_t bits = h->data<uint16_t>()[k];
    EXPECT_LE(bits & 0x7fffu, 0x3c00u) << "|x| <= 1.0 in binary16";
  }
}

TEST(NDArray, CopyIsDeep) {
  auto a = NDArray::create({16}, DType::f32());
  ASSERT_TRUE(a.is_ok());
  a->fill_random(7);
  auto b = a->copy();
  ASSERT_TRUE(b.is_ok());
  EXPECT_NE(b->raw_data(), a->raw_data());
  EXPECT_EQ(b->shape(), a->shape());
  EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0);
  b->data<float>()[0] = 5.0f;
  EXPECT_NE(a->data<float>()[0], 5.0f);
}

TEST(NDArray, CopyFromNeedsTheSameShapeAndType) {
  auto a = NDArray::create({4}, DType::f32());
  auto b = NDArray::create({4}, DType::f32());
  auto c = NDArray::create({2, 2}, DType::f32());
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  a->fill_random(1);
  EXPECT_TRUE(b->copy_from(*a).is_ok());
  EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0);
  const Status st = c->copy_from(*a);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("float32[4]"), std::string::npos) << st.message();
}

TEST(NDArray, MoveLeavesTheSourceEmpty) {
  auto a = NDArray::create({8}, DType::f32());
  ASSERT_TRUE(a.is_ok());
  void* data = a->raw_data();
  NDArray b = std::move(a).value();
  EXPECT_EQ(b.raw_data(), data);
  EXPECT_EQ(b.numel(), 8);
}

}  // namespace
}  // namespace tessera::runtime
