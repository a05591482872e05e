#include "runtime/package.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "runtime/external_modules.h"
#include "tests/runtime/package_bytes.h"

namespace tessera::runtime {
namespace {

std::string f32_bytes(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return s;
}

// x[2] --k1(w)--> t[2] --k2--> y[2]; w a constant.
PackageContents small_package() {
  PackageContents c;
  c.target = "llvm -mtriple=x86_64-linux-gnu";
  c.library = std::string(
      "\x7f"
      "ELF fake library bytes");
  c.values = {
      {"x", ValueKind::kInput, DType::f32(), {2}, ""},
      {"w", ValueKind::kConstant, DType::f32(), {2}, f32_bytes({1.5f, -2.0f})},
      {"t", ValueKind::kIntermediate, DType::f32(), {2}, ""},
      {"y", ValueKind::kOutput, DType::f32(), {2}, ""},
      {"idx", ValueKind::kConstant, DType::i64(), {}, std::string(8, '\x03')},
  };
  c.calls = {{"k1", {0, 1, 2}}, {"k2", {2, 4, 3}}};
  c.inputs = {0};
  c.outputs = {3};
  return c;
}

using test::fix_checksum;

ErrorCode read_code(std::string bytes, bool fix = true) {
  if (fix) fix_checksum(&bytes);
  return read_package_bytes(bytes).status().code();
}

TEST(Package, RoundTripsThroughBytes) {
  const PackageContents c = small_package();
  auto bytes = write_package_bytes(c);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  EXPECT_EQ(bytes->substr(0, 8), "TSRPKG01");
  auto back = read_package_bytes(*bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
}

TEST(Package, ExternalModulesRoundTripInFormatTwo) {
  PackageContents c = small_package();
  c.externals.push_back(ExternalModule{"cblas", "c-source", "libopenblas.so.0"});
  const std::string bytes = write_package_bytes(c).value();
  EXPECT_EQ(bytes[8], 2);
  auto back = read_package_bytes(bytes);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
  // Without external modules the package stays format 1.
  EXPECT_EQ(write_package_bytes(small_package()).value()[8], 1);
}

TEST(Package, ExternalModuleWithoutALibraryIsRejected) {
  PackageContents c = small_package();
  c.externals.push_back(ExternalModule{"cblas", "c-source", ""});
  auto r = write_package_bytes(c);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("external module 0 ('cblas')"), std::string::npos) << r.status().message();
}

TEST(Package, ALibraryNamedByAPathIsRejected) {
  PackageContents c = small_package();
  c.externals.push_back(ExternalModule{"cblas", "c-source", "/tmp/anything.so"});
  auto r = write_package_bytes(c);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("library '/tmp/anything.so' is a path"), std::string::npos)
      << r.status().message();
}

// A backend module a package names is loaded from the runtime's own folder
// only: a system library's name (found on dlopen's search path) is not
// loaded, so a package cannot make its loader run that library's code.
TEST(Package, ABackendModuleLoadsFromTheRuntimesFolderOnly) {
  PackageContents c = small_package();
  c.externals.push_back(ExternalModule{"evil", "graph-payload", "libm.so.6"});
  ExternalModules modules;
  Status st = modules.open(c);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.to_string();
  EXPECT_NE(st.message().find("modules load from there only"), std::string::npos) << st.message();
  EXPECT_TRUE(external_module_candidates("libm.so.6").size() == 1);
  EXPECT_TRUE(external_module_candidates("../libm.so.6").empty());
}

TEST(Package, EveryTruncationOfAFormatTwoPackageIsAParseError) {
  PackageContents c = small_package();
  c.externals.push_back(ExternalModule{"cblas", "c-source", "libopenblas.so.0"});
  const std::string bytes = write_package_bytes(c).value();
  for (size_t n = 0; n < bytes.size(); ++n)
    ASSERT_EQ(read_package_bytes(std::string_view(bytes).substr(0, n)).status().code(), ErrorCode::kParseError)
        << "length " << n;
}

// A small package whose constant `w` holds 64 values made by `value`.
PackageContents package_with_weights(float (*value)(int)) {
  PackageContents c = small_package();
  std::string w;
  for (int i = 0; i < 64; ++i) {
    const float v = value(i);
    w.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  c.values[1].shape = {64};
  c.values[1].data = w;
  return c;
}

// Weights that are all float16 (a float16 model's, widened at import) or all
// bfloat16 are stored in half the bytes (format 4) and read back exactly; a
// float32 weight that is neither keeps its four bytes (format 1).
TEST(Package, HalfPrecisionWeightsAreStoredInHalfTheBytes) {
  struct Case {
    float (*value)(int);
    uint32_t version;
  };
  const Case cases[] = {
      {[](int i) { return i == 3 ? 65504.0f : static_cast<float>(i - 32) / 1024.0f; }, 4},  // float16
      {[](int i) { return std::ldexp(static_cast<float>(i + 1), 60); }, 4},  // bfloat16, beyond float16's range
      {[](int i) { return 1.0f / static_cast<float>(i + 3); }, 1},           // float32
  };
  const size_t full = write_package_bytes(package_with_weights(cases[2].value)).value().size();
  for (const Case& k : cases) {
    const PackageContents c = package_with_weights(k.value);
    auto bytes = write_package_bytes(c);
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    EXPECT_EQ(static_cast<uint8_t>((*bytes)[8]), k.version);
    if (k.version == 4) EXPECT_LT(bytes->size(), full);
    auto back = read_package_bytes(*bytes);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, c);
    if (k.version != 4) continue;
    for (size_t n = 0; n < bytes->size(); n += 7)
      ASSERT_EQ(read_package_bytes(std::string_view(*bytes).substr(0, n)).status().code(), ErrorCode::kParseError);
  }
}

// A format-4 constant's storage byte: an unknown code, or half storage of a
// value that is not float32, is refused naming the value.
TEST(Package, ABadStorageCodeIsRejected) {
  const PackageContents c = package_with_weights([](int i) { return static_cast<float>(i); });
  const std::string good = write_package_bytes(c).value();
  // The storage byte follows the constant's id (1) among the constants; the
  // float16 data is 128 bytes, so the size field reads 128.
  const std::string id_then_storage = std::string("\x01\0\0\0\x01", 5);
  const size_t at = good.find(id_then_storage + std::string("\x80\0\0\0\0\0\0\0", 8));
  ASSERT_NE(at, std::string::npos);
  std::string bad = good;
  bad[at + 4] = 7;
  EXPECT_EQ(read_code(bad), ErrorCode::kParseError);
  auto r = read_package_bytes([&] {
    fix_checksum(&bad);
    return bad;
  }());
  EXPECT_NE(r.status().message().find("storage 7"), std::string::npos) << r.status().message();
  // The int64 constant `idx` (id 4) stored as float16.
  const size_t idx = good.find(std::string("\x04\0\0\0\0", 5) + std::string("\x08\0\0\0\0\0\0\0", 8));
  ASSERT_NE(idx, std::string::npos);
  bad = good;
  bad[idx + 4] = 1;
  EXPECT_EQ(read_code(bad), ErrorCode::kParseError);
}

TEST(Package, RoundTripsThroughAFile) {
  const std::string path = ::testing::TempDir() + "/roundtrip_" + std::to_string(::getpid()) + ".tsr";
  ASSERT_TRUE(write_package(small_package(), path).is_ok());
  auto back = read_package(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, small_package());
  std::remove(path.c_str());
}

TEST(Package, ConstantsAndLibraryStartOn64ByteOffsets) {
  const PackageContents c = small_package();
  const std::string bytes = write_package_bytes(c).value();
  const size_t w = bytes.find(c.values[1].data);
  const size_t lib = bytes.find(c.library);
  ASSERT_NE(w, std::string::npos);
  ASSERT_NE(lib, std::string::npos);
  EXPECT_EQ(w % 64, 0u);
  EXPECT_EQ(lib % 64, 0u);
  EXPECT_EQ(lib + c.library.size(), bytes.size());
}

TEST(Package, MissingFileIsNotFound) {
  EXPECT_EQ(read_package("/nonexistent/model.tsr").status().code(), ErrorCode::kNotFound);
}

TEST(Package, BadMagicIsAParseError) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[3] = 'X';
  auto r = read_package_bytes(bytes);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("magic"), std::string::npos);
}

// An ONNX model where its package belongs: the message says to compile it.
TEST(Package, AnOnnxModelIsRefusedSayingToCompileItFirst) {
  std::string onnx = "\x08\x07\x12\x07pytorch";  // ir_version 7, producer_name
  onnx.resize(64, '\0');
  auto r = read_package_bytes(onnx, "model.onnx");
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("compile it first (tessera compile model.onnx"), std::string::npos)
      << r.status().message();
}

TEST(Package, NewerVersionIsAParseErrorThatSaysSo) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[8] = static_cast<char>(kPackageFormatVersion + 1);
  auto r = read_package_bytes(bytes);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("newer"), std::string::npos) << r.status().message();
}

TEST(Package, EveryTruncationIsAParseError) {
  const std::string bytes = write_package_bytes(small_package()).value();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = read_package_bytes(std::string_view(bytes).substr(0, n));
    ASSERT_EQ(r.status().code(), ErrorCode::kParseError) << "length " << n;
    ASSERT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  }
}

TEST(Package, TruncationBehindAFixedHeaderIsStillAParseError) {
  // Header patched to announce the shorter payload: the parser itself must notice.
  const std::string bytes = write_package_bytes(small_package()).value();
  for (size_t n = kPackageHeaderBytes; n < bytes.size(); ++n) {
    std::string cut = bytes.substr(0, n);
    const uint64_t payload = n - kPackageHeaderBytes;
    for (int i = 0; i < 8; ++i) cut[16 + i] = static_cast<char>(payload >> (8 * i));
    ASSERT_EQ(read_code(cut), ErrorCode::kParseError) << "length " << n;
  }
}

TEST(Package, FlippedByteFailsTheChecksum) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[bytes.size() - 3] ^= 0x10;  // inside the library
  auto r = read_package_bytes(bytes);
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
}

TEST(Package, TrailingBytesAreAParseError) {
  std::string bytes = write_package_bytes(small_package()).value() + "xx";
  EXPECT_EQ(read_package_bytes(bytes).status().code(), ErrorCode::kParseError);
}

TEST(Package, OutOfRangeArgumentIsRejected) {
  PackageContents c = small_package();
  c.calls[1].args[0] = 17;
  auto w = write_package_bytes(c);
  EXPECT_EQ(w.status().code(), ErrorCode::kParseError);
  EXPECT_NE(w.status().message().find("out of range"), std::string::npos) << w.status().message();
}

TEST(Package, OutOfRangeIdInTheFileIsRejected) {
  PackageContents c = small_package();
  std::string bytes = write_package_bytes(c).value();
  // Find the little-endian args of call "k2" ({2, 4, 3}) and make 4 into 99.
  const std::string needle = std::string("k2", 2) + std::string("\x03\0\0\0\x02\0\0\0\x04\0\0\0", 12);
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2 + 8] = 99;
  EXPECT_EQ(read_code(bytes), ErrorCode::kParseError);
}

TEST(Package, ConstantSizeMismatchIsRejected) {
  PackageContents c = small_package();
  c.values[1].data.pop_back();
  auto w = write_package_bytes(c);
  EXPECT_EQ(w.status().code(), ErrorCode::kParseError);
  EXPECT_NE(w.status().message().find("'w'"), std::string::npos) << w.status().message();
}

TEST(Package, DataOnANonConstantIsRejected) {
  PackageContents c = small_package();
  c.values[2].data = "abcdefgh";
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

TEST(Package, InputMissingFromTheInputListIsRejected) {
  PackageContents c = small_package();
  c.inputs.clear();
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

TEST(Package, DuplicateOutputNameIsRejected) {
  PackageContents c = small_package();
  c.values[3].name = "x";
  Status s = validate_package(c);
  EXPECT_EQ(s.code(), ErrorCode::kParseError);
  EXPECT_NE(s.message().find("not unique"), std::string::npos) << s.message();
}

TEST(Package, WrongKindInTheOutputListIsRejected) {
  PackageContents c = small_package();
  c.outputs = {3, 2};
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

TEST(Package, NegativeDimensionIsRejected) {
  PackageContents c = small_package();
  c.values[2].shape = {-2};
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

TEST(Package, UnstorableDtypeIsRejected) {
  PackageContents c = small_package();
  c.values[2].dtype = DType::handle();
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
  c.values[2].dtype = DType::f32(4);
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

TEST(Package, CallsWithoutALibraryAreRejected) {
  PackageContents c = small_package();
  c.library.clear();
  EXPECT_EQ(validate_package(c).code(), ErrorCode::kParseError);
}

// Offset of value 0's kind byte: header, target string, value count, name "x".
size_t value0_kind_offset() {
  return kPackageHeaderBytes + 4 + small_package().target.size() + 4 + 4 + 1;
}

TEST(Package, UnknownValueKindInTheFileIsRejected) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[value0_kind_offset()] = 9;
  EXPECT_EQ(read_code(bytes), ErrorCode::kParseError);
}

TEST(Package, UnknownDtypeInTheFileIsRejected) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[value0_kind_offset() + 2] = 12;  // float12
  EXPECT_EQ(read_code(bytes), ErrorCode::kParseError);
}

TEST(Package, TooManyDimensionsInTheFileAreRejected) {
  std::string bytes = write_package_bytes(small_package()).value();
  bytes[value0_kind_offset() + 4] = 17;  // ndim
  fix_checksum(&bytes);
  auto r = read_package_bytes(bytes, "m.tsr");
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("m.tsr"), std::string::npos) << r.status().message();
}

TEST(Package, NonZeroPaddingIsRejected) {
  const PackageContents c = small_package();
  std::string bytes = write_package_bytes(c).value();
  // The first constant's (id 1, 8 bytes) header, then padding up to its data.
  const std::string header = std::string("\x01\0\0\0\x08\0\0\0\0\0\0\0", 12);
  const size_t at = bytes.find(header);
  const size_t data = bytes.find(c.values[1].data);
  ASSERT_NE(at, std::string::npos);
  ASSERT_LT(at + 12, data);  // there is padding
  bytes[at + 12] = 1;
  EXPECT_EQ(read_code(bytes), ErrorCode::kParseError);
}

TEST(Package, HeaderFlagsAndVersionZeroAreRejected) {
  const std::string good = write_package_bytes(small_package()).value();
  std::string flags = good;
  flags[12] = 1;
  EXPECT_EQ(read_code(flags), ErrorCode::kParseError);
  std::string v0 = good;
  v0[8] = 0;
  EXPECT_EQ(read_code(v0), ErrorCode::kParseError);
}

TEST(Package, HugeCountInTheFileIsATruncationNotAnAllocation) {
  std::string bytes = write_package_bytes(small_package()).value();
  // The value count follows the target string.
  const size_t at = kPackageHeaderBytes + 4 + small_package().target.size();
  for (int i = 0; i < 4; ++i) bytes[at + i] = '\xff';
  EXPECT_EQ(read_code(bytes), ErrorCode::kParseError);
}

// Fuzz: random truncations and byte flips (with the checksum patched so the
// parser sees them) must give a value or an error, never a crash; run it
// under -DTESSERA_SANITIZE=address,undefined too.
TEST(Package, FuzzedBytesNeverCrash) {
  const std::string good = write_package_bytes(small_package()).value();
  std::mt19937_64 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t pos = rng() % bytes.size();
      bytes[pos] = static_cast<char>(rng() % 4 == 0 ? rng() : bytes[pos] ^ (1u << (rng() % 8)));
    }
    if (rng() % 3 == 0) bytes.resize(rng() % bytes.size());
    if (rng() % 8 != 0) fix_checksum(&bytes);
    auto r = read_package_bytes(bytes);
    if (r.is_ok()) {
      ++accepted;
      // Whatever parses is a valid package that writes back to the same bytes.
      ASSERT_TRUE(validate_package(*r).is_ok());
      ASSERT_EQ(write_package_bytes(*r).value(), bytes);
    } else {
      ASSERT_EQ(r.status().code(), ErrorCode::kParseError) << r.status().message();
    }
  }
  RecordProperty("accepted", accepted);
}

}  // namespace
}  // namespace tessera::runtime
