// Every input checked at the door: numbers out of range, bad endpoints, an
// opset the importer does not know, an unknown -mattr feature, a JSON number
// too large for a double. Each is refused with one clear line and a non-zero
// exit, before anything is measured, and the database stays as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::test::Output;
using tessera::test::shell;
using tessera::test::tessera;

// One workload, two good records and, between them, one whose cost is a
// number no double holds.
constexpr const char* kWorkload =
    R"({"type":"workload","key":"0123456789abcdef0123456789abcdef","op_name":"matmul","shapes":"64x64x64 f32",)"
    R"("flop_count":524288.0,"dag_text":"x"})";
std::string record_line(const std::string& cost, double timestamp) {
  return R"({"type":"record","workload_key":"0123456789abcdef0123456789abcdef",)"
         R"("target":"llvm -mtriple=x86_64-linux-gnu -mcpu=icelake-server","device_key":"x86","space":"sketch",)"
         R"("steps":[],"knob_config":null,"costs":[)" +
         cost +
         R"(],"error_kind":"ok","error_message":"",)"
         R"("build_seconds":0.8,"run_seconds":0.05,"timestamp":)" +
         std::to_string(timestamp) + "}";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private folder with a records database of two records.
class Door : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/tessera-door-test-XXXXXX";
    dir_ = ::mkdtemp(templ);
    db_ = dir_ + "/door.db";
    std::ofstream(dir_ + "/good.jsonl") << kWorkload << "\n"
                                        << record_line("0.003", 1763770051.0) << "\n"
                                        << record_line("0.002", 1763770052.0) << "\n";
    Output made = tessera("records import --db " + db_ + " " + dir_ + "/good.jsonl");
    ASSERT_EQ(made.code, 0) << made.text;
    checksum_ = std::hash<std::string>()(read_bytes(db_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `command` exits non-zero with one line that holds `needle`, and the
  // database is byte for byte what it was.
  void expect_refused(const std::string& command, const std::string& needle) {
    Output out = tessera(command);
    EXPECT_NE(out.code, 0) << command << "\n" << out.text;
    EXPECT_NE(out.code, -1) << command << " did not exit (a signal?)\n" << out.text;
    EXPECT_NE(out.text.find(needle), std::string::npos) << command << "\n" << out.text;
    EXPECT_EQ(std::count(out.text.begin(), out.text.end(), '\n'), 1) << command << "\n" << out.text;
    EXPECT_EQ(std::hash<std::string>()(read_bytes(db_)), checksum_) << command << " changed the database";
  }

  std::string tune(const std::string& options) const {
    return "tune --op matmul:M=8,N=8,K=8 --trials 4 --db " + db_ + " " + options;
  }

  std::string dir_, db_;
  size_t checksum_ = 0;
};

TEST_F(Door, NegativeOrInfiniteMinRepeatMsIsRefused) {
  expect_refused(tune("--min-repeat-ms -1"), "--min-repeat-ms expects a number in 0-60000, got '-1'");
  expect_refused(tune("--min-repeat-ms inf"), "--min-repeat-ms expects a number in 0-60000, got 'inf'");
}

TEST_F(Door, AMillionRepeatsIsRefused) {
  expect_refused(tune("--repeat 1000000"), "--repeat expects an integer in 1-1000, got '1000000'");
}

TEST_F(Door, TrialsThatOverflowAreRefused) {
  expect_refused(tune("--trials 99999999999999999999"), "--trials expects an integer in 1-100000000");
}

TEST_F(Door, NanTimeBudgetIsRefused) {
  expect_refused(tune("--time-budget nan"), "--time-budget expects a number in 0-1e+07, got 'nan'");
}

TEST_F(Door, NegativeSeedIsRefused) {
  expect_refused(tune("--seed -1"), "--seed expects an integer in 0-9223372036854775807, got '-1'");
}

TEST_F(Door, APortPast65535IsRefused) {
  expect_refused("tracker --bind tcp://127.0.0.1:99999 --insecure", "the port must be 1-65535");
  expect_refused(tune("--tracker tcp://127.0.0.1:70000 --key k --insecure"), "the port must be 1-65535");
}

// Loopback by address: a name that merely starts with "127." is not one.
TEST_F(Door, PlaintextToAHostNamedLike127IsRefused) {
  expect_refused("tracker --bind tcp://127.attacker.invalid:9190 --insecure", "only on ipc:// or loopback");
  expect_refused(tune("--tracker tcp://127.0.0.1.attacker.invalid:9190 --key k --insecure"),
                 "only on ipc:// or loopback");
}

TEST_F(Door, UnknownMattrFeatureIsRefused) {
  expect_refused(tune("--target 'llvm -mtriple=x86_64-linux-gnu -mattr=+nonsense'"),
                 "LLVM does not know the -mattr feature 'nonsense'");
  Output known = tessera(
      "space --op matmul:M=8,N=8,K=8 --target 'llvm -mtriple=x86_64-linux-gnu -mattr=+avx2' "
      "--samples 1");
  EXPECT_EQ(known.code, 0) << known.text;
}

// A model whose kernel no worker would take (a 2 GiB tensor, past the
// worker's 1 GiB a buffer): tune refuses it before measuring, instead of
// storing protocol-error rows it would measure again forever.
TEST_F(Door, TuneRefusesAKernelNoWorkerTakesBeforeMeasuring) {
  const std::string model = dir_ + "/big.onnx";
  Output made = shell(
      "/usr/bin/python3 -c \"import onnx; from onnx import helper, TensorProto as T; "
      "x = helper.make_tensor_value_info('x', T.FLOAT, [1 << 29]); "
      "y = helper.make_tensor_value_info('y', T.FLOAT, [1 << 29]); "
      "g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g', [x], [y]); "
      "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]); m.ir_version = 8; "
      "onnx.save(m, '" +
      model + "')\"");
  if (made.code != 0) GTEST_SKIP() << "python3-onnx cannot write the model: " << made.text;
  Output out = shell("timeout 60 " + std::string(TESSERA_BINARY) + " tune " + model + " --trials 2 --db " + db_);
  EXPECT_EQ(out.code, 1) << out.text;
  EXPECT_NE(out.text.find("is beyond what a worker measures"), std::string::npos) << out.text;
  EXPECT_EQ(out.text.find("tuning"), std::string::npos) << out.text;
  EXPECT_EQ(std::hash<std::string>()(read_bytes(db_)), checksum_);
}

// An opset newer than the ONNX library knows: refused by compile, and by
// tune before anything is measured.
TEST_F(Door, Opset99ModelIsRefusedByCompileAndTune) {
  const std::string model = dir_ + "/opset99.onnx";
  Output made = shell(
      "/usr/bin/python3 -c \"import onnx; from onnx import helper, TensorProto as T; "
      "x = helper.make_tensor_value_info('x', T.FLOAT, [2, 3]); "
      "y = helper.make_tensor_value_info('y', T.FLOAT, [2, 3]); "
      "g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g', [x], [y]); "
      "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 99)]); m.ir_version = 8; "
      "onnx.save(m, '" +
      model + "')\"");
  if (made.code != 0) GTEST_SKIP() << "python3-onnx cannot write the model: " << made.text;
  for (const std::string& command :
       {"compile " + model + " -o " + dir_ + "/m.tsr --db " + db_, "tune " + model + " --trials 4 --db " + db_}) {
    Output out = tessera(command);
    EXPECT_NE(out.code, 0) << command << "\n" << out.text;
    EXPECT_NE(out.text.find("opset 99 of the default domain is not supported (supported: 1-"), std::string::npos)
        << command << "\n"
        << out.text;
    EXPECT_EQ(out.text.find("tuning"), std::string::npos) << command << " started tuning\n" << out.text;
    EXPECT_EQ(std::hash<std::string>()(read_bytes(db_)), checksum_) << command << " changed the database";
  }
}

// 1e999 is a line error like any other: the good lines around it are stored.
TEST_F(Door, JsonNumberOutOfRangeIsALineErrorAndTheGoodLinesAreStored) {
  const std::string file = dir_ + "/huge.jsonl";
  std::ofstream(file) << kWorkload << "\n"
                      << record_line("0.004", 1763770053.0) << "\n"
                      << record_line("1e999", 1763770054.0) << "\n"
                      << record_line("0.005", 1763770055.0) << "\n";
  Output out = tessera("records import --db " + dir_ + "/new.db " + file);
  EXPECT_EQ(out.code, 1) << out.text;  // malformed lines: 1, never an abort
  EXPECT_NE(out.text.find(file + ":3: a JSON number out of range"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("2 records added"), std::string::npos) << out.text;
}

}  // namespace
