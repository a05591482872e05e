#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "runtime/ndarray.h"

namespace tessera::runtime {
namespace {

// Bytes written by numpy 1.24 (np.save; np.lib.format.write_array for
// version 2.0), so that the reader and writer are checked against the real thing.
// np.save of Float32x2x3
const std::string kFloat32x2x3(
    "\x93"
    "NUMPY\x01"
    "\x00"
    "v\x00"
    ""
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          "
    "\x0a"
    "\x00"
    "\x00"
    "\xc0"
    "\x3f"
    "\x00"
    "\x00"
    "\x00"
    "\xc0"
    "\x00"
    "\x00"
    "\x80"
    ">\x00"
    "\x00"
    "@@\x00"
    ""
    "\x00"
    "\x80"
    "@\x00"
    "\x00"
    "\xa0"
    "@",
    152);
// np.save of Int64x3
const std::string kInt64x3(
    "\x93"
    "NUMPY\x01"
    "\x00"
    "v\x00"
    ""
    "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
    "                                                            "
    "\x0a"
    "\x01"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\xfe"
    "\xff"
    "\xff"
    "\xff"
    "\xff"
    "\xff"
    ""
    "\xff"
    "\xff"
    ",\x01"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "\x00"
    "",
    152);
// np.save of Bool2
const std::string kBool2(
    "\x93"
    "NUMPY\x01"
    "\x00"
    "v\x00"
    ""
    "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }"
    "                                                            "
    "\x0a"
    "\x01"
    "\x00"
    "",
    130);
// np.save of Float32Scalar
const std::string kFloat32Scalar(
    "\x93"
    "NUMPY\x01"
    "\x00"
    "v\x00"
    ""
    "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"
    "                                                              "
    "\x0a"
    "\x00"
    "\x00"
    "`@",
    132);
// np.save of Int32V2
const std::string kInt32V2(
    "\x93"
    "NUMPY\x02"
    "\x00"
    "t\x00"
    "\x00"
    "\x00"
    ""
    "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
    "                                                          "
    "\x0a"
    "\x07"
    "\x00"
    "\x00"
    "\x00"
    "\xf8"
    "\xff"
    "\xff"
    "\xff"
    "",
    136);

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/tessera_npy_" + std::to_string(::getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// kFloat32x2x3 with its header dict replaced (same length, so offsets hold).
std::string with_header(const std::string& dict) {
  std::string bytes = kFloat32x2x3;
  EXPECT_LE(dict.size(), 117u);
  bytes.replace(10, 117, dict + std::string(117 - dict.size(), ' '));
  return bytes;
}

TEST(Npy, ReadsFloat32WrittenByNumpy) {
  auto a = parse_npy(kFloat32x2x3);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->dtype(), DType::f32());
  EXPECT_EQ(a->shape(), (std::vector<int64_t>{2, 3}));
  const float want[] = {1.5f, -2.0f, 0.25f, 3, 4, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a->data<float>()[i], want[i]);
}

TEST(Npy, ReadsInt64BoolAndScalarWrittenByNumpy) {
  auto i = parse_npy(kInt64x3);
  ASSERT_TRUE(i.is_ok()) << i.status().to_string();
  EXPECT_EQ(i->dtype(), DType::i64());
  EXPECT_EQ(i->data<int64_t>()[1], -2);
  EXPECT_EQ(i->data<int64_t>()[2], 300);
  auto b = parse_npy(kBool2);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->dtype(), DType::boolean());
  EXPECT_EQ(b->data<uint8_t>()[0], 1);
  EXPECT_EQ(b->data<uint8_t>()[1], 0);
  auto s = parse_npy(kFloat32Scalar);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->shape().empty());
  EXPECT_EQ(s->data<float>()[0], 3.5f);
}

TEST(Npy, ReadsVersion2Header) {
  auto a = parse_npy(kInt32V2);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->dtype(), DType::i32());
  EXPECT_EQ(a->data<int32_t>()[0], 7);
  EXPECT_EQ(a->data<int32_t>()[1], -8);
}

TEST(Npy, WritesExactlyWhatNumpyWrites) {
  for (const std::string* bytes : {&kFloat32x2x3, &kInt64x3, &kBool2, &kFloat32Scalar}) {
    auto a = parse_npy(*bytes);
    ASSERT_TRUE(a.is_ok()) << a.status().to_string();
    auto written = to_npy_bytes(*a);
    ASSERT_TRUE(written.is_ok()) << written.status().to_string();
    EXPECT_EQ(*written, *bytes) << a->describe();
  }
}

TEST(Npy, SaveThenLoadRoundTripsEverySupportedDtype) {
  const DType types[] = {DType::f32(), DType::f64(), DType::f16(), DType::i8(),
                         DType::i32(), DType::i64(), DType::u8(),  DType::boolean()};
  for (DType type : types) {
    auto a = NDArray::create({3, 5, 2}, type);
    ASSERT_TRUE(a.is_ok());
    a->fill_random(11);
    const std::string path = temp_path("roundtrip_" + type.to_string() + ".npy");
    ASSERT_TRUE(save_npy(*a, path).is_ok()) << type.to_string();
    auto b = load_npy(path);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(b->dtype(), type);
    EXPECT_EQ(b->shape(), a->shape());
    EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0) << type.to_string();
    std::remove(path.c_str());
  }
}

TEST(Npy, EmptyArrayRoundTrips) {
  auto a = NDArray::create({0, 4}, DType::f32());
  ASSERT_TRUE(a.is_ok());
  const std::string path = temp_path("empty.npy");
  ASSERT_TRUE(save_npy(*a, path).is_ok());
  auto b = load_npy(path);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(b->shape(), (std::vector<int64_t>{0, 4}));
  std::remove(path.c_str());
}

TEST(Npy, MissingFileIsNotFound) {
  const std::string path = temp_path("does_not_exist.npy");
  auto a = load_npy(path);
  EXPECT_EQ(a.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(a.status().message().find(path), std::string::npos) << a.status().message();
}

TEST(Npy, BadMagicIsParseError) {
  auto a = parse_npy("PK\x03\x04 this is a zip file, not an array", "input.npy");
  EXPECT_EQ(a.status().code(), ErrorCode::kParseError);
  EXPECT_NE(a.status().message().find("input.npy"), std::string::npos) << a.status().message();
}

TEST(Npy, TruncatedDataInAFileIsParseError) {
  const std::string path = temp_path("truncated.npy");
  write_file(path, kFloat32x2x3.substr(0, kFloat32x2x3.size() - 3));
  auto a = load_npy(path);
  EXPECT_EQ(a.status().code(), ErrorCode::kParseError);
  EXPECT_NE(a.status().message().find("truncated"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find(path), std::string::npos) << a.status().message();
  std::remove(path.c_str());
}

TEST(Npy, TruncatedHeaderIsParseError) {
  for (size_t keep : {size_t{3}, size_t{8}, size_t{40}}) {
    EXPECT_EQ(parse_npy(kFloat32x2x3.substr(0, keep)).status().code(), ErrorCode::kParseError) << keep;
    const std::string path = temp_path("short_header.npy");
    write_file(path, kFloat32x2x3.substr(0, keep));
    EXPECT_EQ(load_npy(path).status().code(), ErrorCode::kParseError) << keep;
    std::remove(path.c_str());
  }
}

TEST(Npy, TrailingBytesAreParseError) {
  EXPECT_EQ(parse_npy(kFloat32x2x3 + "xx").status().code(), ErrorCode::kParseError);
  const std::string path = temp_path("trailing.npy");
  write_file(path, kFloat32x2x3 + "xx");
  EXPECT_EQ(load_npy(path).status().code(), ErrorCode::kParseError);
  std::remove(path.c_str());
}

TEST(Npy, UnsupportedDtypeIsInvalidArgument) {
  auto a = parse_npy(with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("<c8"), std::string::npos) << a.status().message();
}

TEST(Npy, BigEndianIsInvalidArgument) {
  auto a = parse_npy(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"));
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Npy, FortranOrderIsInvalidArgument) {
  auto a = parse_npy(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"));
  EXPECT_EQ(a.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Npy, MalformedHeaderIsParseError) {
  for (const char* dict :
       {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", "{'descr': '<f4', 'fortran_order': False }",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }",
        "{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", "['<f4', False, (2, 3)]"}) {
    EXPECT_EQ(parse_npy(with_header(dict)).status().code(), ErrorCode::kParseError) << dict;
  }
}

TEST(Npy, HeaderInAnyKeyOrderWithPython2IntegersIsRead) {
  auto a = parse_npy(with_header("{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f4\"}"));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->shape(), (std::vector<int64_t>{2, 3}));
}

TEST(Npy, HugeDeclaredShapeIsParseErrorWithoutAllocating) {
  for (const char* dict : {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"}) {
    auto a = parse_npy(with_header(dict));
    EXPECT_EQ(a.status().code(), ErrorCode::kParseError) << dict;
    const std::string path = temp_path("huge.npy");
    write_file(path, with_header(dict));
    EXPECT_EQ(load_npy(path).status().code(), ErrorCode::kParseError) << dict;
    std::remove(path.c_str());
  }
}

TEST(Npy, SavingBfloat16IsInvalidArgument) {
  auto a = NDArray::create({2}, DType::bf16());
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(save_npy(*a, temp_path("bf16.npy")).code(), ErrorCode::kInvalidArgument);
}

TEST(Npy, SavingIntoAMissingDirectoryIsIOError) {
  auto a = NDArray::create({2}, DType::f32());
  ASSERT_TRUE(a.is_ok());
  const Status st = save_npy(*a, temp_path("no_such_dir") + "/a.npy");
  EXPECT_EQ(st.code(), ErrorCode::kIOError);
  EXPECT_NE(st.message().find("no_such_dir"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera::runtime
