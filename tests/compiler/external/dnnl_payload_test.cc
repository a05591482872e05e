// The dnnl module refuses a payload that does not fit its call before it
// builds anything: each crafted payload below crashed or corrupted the heap
// of every loader (a group count of zero, an input list longer than the
// call, a shape larger than its buffer, a weight of other channels), and is
// now a clear error naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/external/dnnl.h"
#include "runtime/external_modules.h"

namespace tessera::external {
namespace {

using nlohmann::json;

// A 3x3 conv, 4 -> 8 channels over 8 x 8 in NCHW, with a bias and a ReLU:
// inputs x (0), w (1), b (2), output y (3).
json conv_payload() {
  return json::parse(R"({
    "version": 1, "symbol": "r0",
    "values": [{"id": 0, "shape": [1, 4, 8, 8]}, {"id": 1, "shape": [8, 4, 3, 3]}, {"id": 2, "shape": [8]},
               {"id": 3, "shape": [1, 8, 8, 8]}],
    "inputs": [{"id": 0, "weight": false}, {"id": 1, "weight": true}, {"id": 2, "weight": true}],
    "outputs": [3],
    "ops": [{"op": "conv", "name": "c", "output": 3, "inputs": [0, 1, 2], "nhwc": false, "groups": 1,
             "strides": [1, 1], "dilations": [0, 0], "pads_begin": [1, 1], "pads_end": [1, 1],
             "post_ops": [{"kind": "relu"}]}]
  })");
}

class DnnlPayload : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::PackageContents contents;
    contents.externals.push_back({"dnnl", "graph-payload", kDnnlModuleLibrary});
    const Status opened = modules_.open(contents);
    if (opened.code() == ErrorCode::kNotFound) GTEST_SKIP() << opened.message();
    ASSERT_TRUE(opened.is_ok()) << opened.to_string();
    for (int64_t n : {4 * 64, 8 * 4 * 9, 8, 8 * 64}) buffers_.emplace_back(static_cast<size_t>(n), 0.5f);
  }

  // Builds `payload` over the four buffers (sizes from `bytes` when given):
  // the module's error, or "" when it built.
  std::string create(const json& payload, std::vector<int64_t> bytes = {}) {
    std::vector<void*> args;
    for (auto& b : buffers_) args.push_back(b.data());
    if (bytes.empty())
      for (auto& b : buffers_) bytes.push_back(static_cast<int64_t>(b.size() * sizeof(float)));
    args.resize(bytes.size(), buffers_.back().data());
    runtime::ExternalPayload p{"dnnl", "1", "r0", payload.dump()};
    auto region = modules_.create(p, args.data(), bytes);
    if (region.is_ok()) return "";
    EXPECT_EQ(region.status().code(), ErrorCode::kParseError);
    return region.status().message();
  }

  runtime::ExternalModules modules_;
  std::vector<std::vector<float>> buffers_;
};

TEST_F(DnnlPayload, TheRealShapeBuildsAndRuns) {
  EXPECT_EQ(create(conv_payload()), "");
}

TEST_F(DnnlPayload, EachCraftedFieldIsRefusedNamingIt) {
  struct Case {
    const char* what;
    void (*mutate)(json&);
    const char* says;
  };
  const Case cases[] = {
      {"zero groups", [](json& p) { p["ops"][0]["groups"] = 0; }, "groups is 0"},
      {"groups not dividing", [](json& p) { p["ops"][0]["groups"] = 3; }, "do not divide"},
      {"an input more than the call",
       [](json& p) {
         p["values"].push_back({{"id", 9}, {"shape", {4}}});
         p["inputs"].push_back({{"id", 9}, {"weight", false}});
       },
       "4 buffers"},
      {"an output larger than its buffer",
       [](json& p) {
         p["values"][3]["shape"] = {1, 8, 16, 16};
         p["values"][0]["shape"] = {1, 4, 16, 16};
       },
       "bytes, its buffer"},
      {"a weight of other channels",
       [](json& p) {
         p["values"][1]["shape"] = {4, 8, 3, 3};
       },
       "weight does not match"},
      {"a conv of rank 3",
       [](json& p) {
         p["values"][0]["shape"] = {4, 8, 8};
       },
       "rank 3"},
      {"a negative dimension", [](json& p) { p["values"][2]["shape"] = {-8}; }, "outside"},
      {"a stride of zero",
       [](json& p) {
         p["ops"][0]["strides"] = {0, 1};
       },
       "strides"},
      {"a stride that is text",
       [](json& p) {
         p["ops"][0]["strides"] = {"one", 1};
       },
       "not an integer"},
      {"an id without a shape", [](json& p) { p["outputs"][0] = 42; }, "has no shape"},
      {"an unknown op", [](json& p) { p["ops"][0]["op"] = "softmax"; }, "unknown op"},
      {"a list that is a number", [](json& p) { p["ops"] = 3; }, "'ops' is not a list"},
  };
  for (const Case& c : cases) {
    json p = conv_payload();
    c.mutate(p);
    const std::string error = create(p);
    EXPECT_NE(error.find(c.says), std::string::npos) << c.what << ": " << error;
  }
}

TEST_F(DnnlPayload, ABufferSmallerThanItsValueIsRefused) {
  const std::string error = create(conv_payload(), {4 * 64 * 4, 8 * 36 * 4, 8 * 4, 8 * 32 * 4});
  EXPECT_NE(error.find("argument 3 takes 2048 bytes, its buffer 1024"), std::string::npos) << error;
}

TEST_F(DnnlPayload, ATransposeWhosePermIsNoPermutationIsRefused) {
  json p = conv_payload();
  p["values"].push_back({{"id", 4}, {"shape", {1, 8, 8, 8}}});
  p["ops"][0]["output"] = 4;
  p["ops"].push_back({{"op", "transpose"}, {"output", 3}, {"inputs", {4}}, {"perm", {0, 1, 1, 3}}});
  EXPECT_NE(create(p).find("not a permutation"), std::string::npos);
  p["ops"][1]["perm"] = {0, 1, 2, 3};
  EXPECT_EQ(create(p), "");
}

}  // namespace
}  // namespace tessera::external
