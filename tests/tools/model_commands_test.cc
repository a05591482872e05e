// `tessera compile` and `tessera run` (and `tune MODEL.onnx`) as a user runs
// them: real ONNX files, real packages, outputs compared with ONNX's expected
// outputs, and every kind of bad input refused with a message that says what.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/ndarray.h"
#include "tests/tools/command.h"

namespace {

namespace fs = std::filesystem;
using tessera::test::Output;
using tessera::test::tessera;
const fs::path kNodeDir = "/usr/share/libonnx-testdata/data/node";

class ModelCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kNodeDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
    dir_ = fs::temp_directory_path() / ("tessera_model_cmds_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

const fs::path kConv = kNodeDir / "test_conv_with_strides_padding";

// How many records of `db` were measured outside a search space (a fallback
// or the generic schedule: space "manual" in `records list`); -1 on error.
int manual_records(const std::string& db) {
  Output list = tessera("records list --db " + db);
  if (list.code != 0) return -1;
  int manual = 0;
  for (size_t at = list.text.find(" manual "); at != std::string::npos; at = list.text.find(" manual ", at + 1))
    ++manual;
  return manual;
}

TEST_F(ModelCommands, CompileThenRunMatchesOnnxExpectedOutput) {
  Output c =
      tessera("compile " + (kConv / "model.onnx").string() + " -o " + path("conv.tsr") + " --db " + path("none.db"));
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("no records database"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("wrote " + path("conv.tsr")), std::string::npos) << c.text;
  EXPECT_FALSE(fs::exists(path("none.db"))) << "compile must not create a database";

  const fs::path data = kConv / "test_data_set_0";
  Output r = tessera("run " + path("conv.tsr") + " --input x=" + (data / "input_0.pb").string() +
                     " -i W=" + (data / "input_1.pb").string() + " --output-dir " + path("out") + " --bench 3");
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("latency: median"), std::string::npos) << r.text;
  auto got = tessera::runtime::load_npy(path("out/y.npy"));
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();

  // The expected output, through `run` itself: a .pb is an input format too.
  // Compare by value with the float data at the end of the TensorProto.
  std::ifstream want_file(data / "output_0.pb", std::ios::binary);
  std::string want_bytes((std::istreambuf_iterator<char>(want_file)), std::istreambuf_iterator<char>());
  const size_t n = static_cast<size_t>(got->numel());
  ASSERT_GE(want_bytes.size(), n * 4);
  // Copied out: the floats need not be aligned within the file.
  std::vector<float> want(n);
  std::memcpy(want.data(), want_bytes.data() + want_bytes.size() - n * 4, n * 4);
  const float* g = got->data<float>();
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(g[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << i;
}

TEST_F(ModelCommands, BadInputsAreClearErrors) {
  ASSERT_EQ(tessera("compile " + (kConv / "model.onnx").string() + " -o " + path("m.tsr")).code, 0);
  const fs::path data = kConv / "test_data_set_0";
  const std::string x = " --input x=" + (data / "input_0.pb").string();

  Output missing = tessera("run " + path("m.tsr") + x);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.text.find("input 'W' is not given"), std::string::npos) << missing.text;

  Output unknown = tessera("run " + path("m.tsr") + x + " --input nope=a.npy");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.text.find("no input 'nope'"), std::string::npos) << unknown.text;

  Output wrong_shape = tessera("run " + path("m.tsr") + " --input x=" + (data / "input_1.pb").string() +
                               " --input W=" + (data / "input_1.pb").string());
  EXPECT_EQ(wrong_shape.code, 1);
  EXPECT_NE(wrong_shape.text.find("must be float32[1, 1, 7, 5]"), std::string::npos) << wrong_shape.text;

  Output bad_ext = tessera("run " + path("m.tsr") + x + " --input W=" + path("w.txt"));
  EXPECT_EQ(bad_ext.code, 1);
  EXPECT_NE(bad_ext.text.find(".npy or .pb"), std::string::npos) << bad_ext.text;

  Output bad_spec = tessera("run " + path("m.tsr") + " --input W");
  EXPECT_EQ(bad_spec.code, 2);

  // A damaged package: one byte flipped in the middle.
  {
    std::fstream f(path("m.tsr"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path("m.tsr")) / 2));
    f.put('\x5a');
  }
  Output damaged = tessera("run " + path("m.tsr") + " --random-inputs 1");
  EXPECT_EQ(damaged.code, 1);
  EXPECT_NE(damaged.text.find("checksum"), std::string::npos) << damaged.text;

  Output no_model = tessera("compile " + path("absent.onnx"));
  EXPECT_EQ(no_model.code, 1);
  EXPECT_NE(no_model.text.find("absent.onnx"), std::string::npos) << no_model.text;

  std::ofstream(path("junk.onnx")) << "this is not a model";
  Output junk = tessera("compile " + path("junk.onnx") + " -o " + path("junk.tsr"));
  EXPECT_EQ(junk.code, 1);
  EXPECT_FALSE(fs::exists(path("junk.tsr")));

  Output not_onnx = tessera("compile " + path("m.tsr"));
  EXPECT_EQ(not_onnx.code, 2);
}

TEST_F(ModelCommands, DynamicInputNeedsAShapeBinding) {
  // Resize with sizes fed at run time has no static shape; the importer says which node.
  Output r = tessera("compile " + (kNodeDir / "test_reshape_reordered_all_dims" / "model.onnx").string() + " -o " +
                     path("r.tsr"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.text.find("(Reshape)"), std::string::npos) << r.text;
  Output bad = tessera("compile " + (kConv / "model.onnx").string() + " --input-shape x:1,a");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.text.find("--input-shape 'x:1,a'"), std::string::npos) << bad.text;
}

TEST_F(ModelCommands, TuneRejectsAnUnknownCacheModeAndWarmOnlyOptionsWhenCold) {
  const std::string model = (kConv / "model.onnx").string();
  Output bad = tessera("tune " + model + " --trials 4 --cache lukewarm --db " + path("c.db"));
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("--cache must be model, warm or cold, not 'lukewarm'"), std::string::npos) << bad.text;
  Output mixed = tessera("tune " + model + " --trials 4 --cache cold --min-repeat-ms 5 --db " + path("c.db"));
  EXPECT_EQ(mixed.code, 2) << mixed.text;
  EXPECT_NE(mixed.text.find("--min-repeat-ms is for --cache model or warm"), std::string::npos) << mixed.text;
  EXPECT_FALSE(std::filesystem::exists(path("c.db")));  // refused before anything is written
}

TEST_F(ModelCommands, TuneTheModelThenCompileUsesItsRecords) {
  const std::string db = path("t.db");
  // Timed cold: single calls, the caches swept before each.
  Output t = tessera("tune " + (kConv / "model.onnx").string() + " --trials 8 --batch 4 --db " + db +
                     " --cache cold --repeat 1");
  ASSERT_EQ(t.code, 0) << t.text;
  Output c = tessera("compile " + (kConv / "model.onnx").string() + " --db " + db + " -o " + path("t.tsr"));
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("1 kernels, 1 scheduled from records"), std::string::npos) << c.text;
  Output r = tessera("run " + path("t.tsr") + " --random-inputs 3");
  EXPECT_EQ(r.code, 0) << r.text;
  // What a user reads fits a terminal of 120 columns at the defaults (the
  // test's own long paths counted as "FILE").
  auto widest = [&](std::string text) {
    for (const std::string& long_path : {path(""), kConv.string()})
      for (size_t at; (at = text.find(long_path)) != std::string::npos;) text.replace(at, long_path.size(), "FILE");
    size_t widest = 0, start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
      widest = std::max(widest, end - start);
    return std::max(widest, text.size() - start);
  };
  EXPECT_LE(widest(c.text), 120u) << c.text;
  for (const std::string& command : {"records list --db " + db, "records stats --db " + db, "records best --db " + db,
                                     "records why " + (kConv / "model.onnx").string() + " --db " + db}) {
    Output o = tessera(command);
    EXPECT_EQ(o.code, 0) << command << ": " << o.text;
    EXPECT_LE(widest(o.text), 120u) << command << ":\n" << o.text;
  }
}

TEST_F(ModelCommands, TheTemplateFallbackIsMeasuredOnceAndCompetes) {
  // The fallback (what compile uses without records) is measured before the
  // search, once per database, so a short search never leaves a kernel slower.
  const std::string db = path("f.db");
  const std::string tune =
      "tune --op matmul:M=64,N=64,K=64 --trials 4 --batch 4 --repeat 1 --min-repeat-ms 1 --db " + db;
  for (int run = 0; run < 2; ++run) ASSERT_EQ(tessera(tune).code, 0);
  EXPECT_EQ(manual_records(db), 1) << tessera("records list --db " + db).text;
  // The timing mode is on record even when the default was used.
  Output exported = tessera("records export --db " + db + " -o " + path("f.jsonl"));
  ASSERT_EQ(exported.code, 0) << exported.text;
  std::ifstream in(path("f.jsonl"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(" --cache model\""), std::string::npos) << text.substr(0, 600);
}

TEST_F(ModelCommands, TheGenericScheduleIsTheBaselineOfAKernelWithoutATemplate) {
  // Softmax has no template: compile time runs the generic schedule, so the
  // tuner measures that first (once per database), as it does a fallback.
  const std::string db = path("g.db");
  const std::string tune =
      "tune --op softmax:M=64,N=256 --space sketch --trials 4 --batch 4 --repeat 1 "
      "--min-repeat-ms 1 --db " +
      db;
  for (int run = 0; run < 2; ++run) ASSERT_EQ(tessera(tune).code, 0);
  EXPECT_EQ(manual_records(db), 1) << tessera("records list --db " + db).text;
}

// After a model's tuning, the regions an external backend can run are timed
// both ways and stored with the session; compile --byoc auto (the default)
// takes each region's faster way from them, and records why says which.
TEST_F(ModelCommands, TuneTimesTheBackendsRegionsAndCompileTakesTheFasterFromTheRecords) {
  // A max pool: one region oneDNN takes (the conv model's weights are inputs, which it does not).
  const std::string model = (kNodeDir / "test_maxpool_2d_default" / "model.onnx").string(), db = path("r.db");
  Output t = tessera("tune " + model + " --trials 4 --batch 4 --repeat 1 --db " + db + " --byoc dnnl --verbose");
  ASSERT_EQ(t.code, 0) << t.text;
  ASSERT_NE(t.text.find("regions timed both ways (dnnl), stored for compile --byoc auto:"), std::string::npos)
      << t.text;
  EXPECT_NE(t.text.find("dnnl_region0"), std::string::npos) << t.text;  // --verbose lists every region
  EXPECT_NE(t.text.find("s per trial"), std::string::npos) << t.text;
  // At defaults only a region that runs on the backend has its line; the
  // others are counted.
  Output quiet = tessera("tune " + model + " --trials 4 --batch 4 --repeat 1 --db " + path("q.db") + " --byoc dnnl");
  ASSERT_EQ(quiet.code, 0) << quiet.text;
  EXPECT_EQ(quiet.text.find("s per trial"), std::string::npos) << quiet.text;
  const bool listed = quiet.text.find("dnnl_region0") != std::string::npos;
  if (listed)
    EXPECT_NE(quiet.text.find("dnnl_region0             dnnl "), std::string::npos) << quiet.text;
  else
    EXPECT_NE(quiet.text.find("1 of 1 regions run on Tessera (--verbose lists them)"), std::string::npos) << quiet.text;
  Output c = tessera("compile " + model + " --db " + db + " -o " + path("r.tsr"));
  ASSERT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("times from tuning session 1;"), std::string::npos) << c.text;
  EXPECT_EQ(c.text.find("dnnl_region0"), std::string::npos) << c.text;  // the table is --verbose's
  Output verbose = tessera("compile " + model + " --db " + db + " -o " + path("r.tsr") + " --verbose");
  ASSERT_EQ(verbose.code, 0) << verbose.text;
  EXPECT_NE(verbose.text.find("each the faster way (--byoc auto)"), std::string::npos) << verbose.text;
  EXPECT_NE(verbose.text.find("tuning session 1)"), std::string::npos) << verbose.text;  // not timed again
  EXPECT_EQ(tessera("run " + path("r.tsr") + " --random-inputs 3").code, 0);
  Output why = tessera("records why " + model + " --db " + db);
  ASSERT_EQ(why.code, 0) << why.text;
  EXPECT_NE(why.text.find("1 region dnnl can run"), std::string::npos) << why.text;
  EXPECT_NE(why.text.find("(tuning session 1)"), std::string::npos) << why.text;
  EXPECT_NE(why.text.find("it was faster"), std::string::npos) << why.text;

  // Without the records' times (another database), compile times nothing:
  // the region is Tessera's, and compile says why.
  Output fresh = tessera("compile " + model + " --db " + path("none.db") + " -o " + path("f.tsr"));
  ASSERT_EQ(fresh.code, 0) << fresh.text;
  EXPECT_NE(fresh.text.find("the region dnnl can run is Tessera's: compile times nothing"), std::string::npos)
      << fresh.text;
  Output fresh_verbose =
      tessera("compile " + model + " --db " + path("none.db") + " -o " + path("f.tsr") + " --verbose");
  ASSERT_EQ(fresh_verbose.code, 0) << fresh_verbose.text;
  EXPECT_NE(fresh_verbose.text.find("dnnl_region0             tessera  (1 operator; not timed: tessera tune times it)"),
            std::string::npos)
      << fresh_verbose.text;
  // --byoc none: nothing timed, nothing offloaded.
  Output none = tessera("tune " + model + " --trials 2 --batch 2 --repeat 1 --db " + path("n.db") + " --byoc none");
  ASSERT_EQ(none.code, 0) << none.text;
  EXPECT_EQ(none.text.find("regions"), std::string::npos) << none.text;
}

TEST_F(ModelCommands, TuneRefusesABackendItDoesNotKnowOrWithoutAModel) {
  const std::string model = (kConv / "model.onnx").string();
  Output bogus = tessera("tune " + model + " --trials 2 --db " + path("b.db") + " --byoc tpu");
  EXPECT_EQ(bogus.code, 2) << bogus.text;
  EXPECT_NE(bogus.text.find("--byoc: "), std::string::npos) << bogus.text;
  EXPECT_NE(bogus.text.find("dnnl"), std::string::npos) << bogus.text;  // the known names
  Output op = tessera("tune --op matmul:M=8,N=8,K=8 --trials 2 --db " + path("b.db") + " --byoc dnnl");
  EXPECT_EQ(op.code, 2) << op.text;
  EXPECT_NE(op.text.find("--byoc applies to a model's tuning"), std::string::npos) << op.text;
  EXPECT_FALSE(fs::exists(path("b.db")));  // refused before anything is written
}

// --precision bf16: on this machine, if it has a bfloat16 dot product, the
// compile prints its difference from float32; on a target without one, and
// for a value it does not know, one clear line and no package.
TEST_F(ModelCommands, PrecisionBf16SaysWhatItCostsOrWhyItCannot) {
  const std::string model = path("encoder.onnx");
  Output gen = tessera::test::shell("/usr/bin/python3 " + std::string(TESSERA_SOURCE_DIR) +
                                    "/scripts/models/transformer.py -o " + model +
                                    " --seq 16 --d-model 32 --heads 2 --ff 64 --layers 1 --pad 2");
  if (gen.code != 0) GTEST_SKIP() << "cannot write the model (python3-onnx): " << gen.text;

  Output znver3 = tessera("compile " + model + " -o " + path("a.tsr") +
                          " --precision bf16 --target 'llvm -mtriple=x86_64-linux-gnu -mcpu=znver3'");
  EXPECT_EQ(znver3.code, 2) << znver3.text;
  EXPECT_NE(znver3.text.find("AVX512-BF16"), std::string::npos) << znver3.text;
  EXPECT_FALSE(fs::exists(path("a.tsr")));
  Output unknown = tessera("compile " + model + " -o " + path("b.tsr") + " --precision half");
  EXPECT_EQ(unknown.code, 2) << unknown.text;
  EXPECT_NE(unknown.text.find("expected fp32, bf16 or fp16"), std::string::npos) << unknown.text;
  Output no_f16c = tessera("compile " + model + " -o " + path("c.tsr") +
                           " --precision fp16 --target 'llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64'");
  EXPECT_EQ(no_f16c.code, 2) << no_f16c.text;
  EXPECT_NE(no_f16c.text.find("F16C"), std::string::npos) << no_f16c.text;
  EXPECT_FALSE(fs::exists(path("c.tsr")));
  Output tune = tessera("tune --op matmul:M=8,N=8,K=8 --precision bf16 --db " + path("t.db"));
  EXPECT_EQ(tune.code, 2) << tune.text;

  // --byoc none: the precision's message is the point, and oneDNN's OpenMP
  // threads outliving the process crash LeakSanitizer's tracer at exit.
  Output here =
      tessera("compile " + model + " -o " + path("c.tsr") + " --precision bf16 --no-records --byoc none --verbose");
  if (here.code == 2 && here.text.find("lacks") != std::string::npos)
    GTEST_SKIP() << "this CPU has no bf16 dot product";
  ASSERT_EQ(here.code, 0) << here.text;
  EXPECT_NE(here.text.find("--precision bf16 against float32 on 3 random inputs: largest difference"),
            std::string::npos)
      << here.text;
  EXPECT_NE(here.text.find("matmul_bf16"), std::string::npos) << here.text;
  Output run = tessera("run " + path("c.tsr") + " --random-inputs 1");
  EXPECT_EQ(run.code, 0) << run.text;
}

}  // namespace
