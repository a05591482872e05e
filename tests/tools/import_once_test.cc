// A model command reads its model once and hands the graph on: `tune
// MODEL.onnx` (its kernels, then the check of its records and the timing of
// its regions), `compile` and `records why MODEL.onnx`. Each runs here in
// this process, as main.cc runs it, and frontend::onnx_files_read() counts
// the files read; model::models_prepared() counts the optimizations and
// layout changes, once a command too however often it plans (Winograd or
// direct, regions on a backend or not).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/model/compile_model.h"
#include "driver/tune.h"
#include "records/store.h"
#include "runtime/graph_executor.h"
#include "tools/commands.h"

namespace {

namespace fs = std::filesystem;
const fs::path kConv = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";

// How many files `run` read and models it prepared while it ran the
// command line `words` ("read/prepared"); its exit code in `*code`.
std::string files_read_by(int (*run)(int, char**, int), std::vector<std::string> words, int* code) {
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  const int64_t read = tessera::frontend::onnx_files_read(), prepared = tessera::model::models_prepared();
  *code = run(static_cast<int>(argv.size()), argv.data(), 2);
  return std::to_string(tessera::frontend::onnx_files_read() - read) + "/" +
         std::to_string(tessera::model::models_prepared() - prepared);
}

TEST(ImportOnce, TuneCompileAndRecordsWhyReadTheModelOnce) {
  if (!fs::exists(kConv)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path dir = fs::temp_directory_path() / ("tessera_import_once_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string(), out = (dir / "t.tsr").string();
  int code = -1;
  // Tuned with the check of its records in the model and its regions timed
  // (this machine's target, dnnl where its module is installed).
  EXPECT_EQ(files_read_by(tessera::cli::run_tune,
                          {"tessera", "tune", kConv.string(), "--trials", "4", "--batch", "4", "--db", db}, &code),
            "1/1");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(
      files_read_by(tessera::cli::run_compile, {"tessera", "compile", kConv.string(), "--db", db, "-o", out}, &code),
      "1/1");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(files_read_by(tessera::cli::run_records, {"tessera", "records", "why", kConv.string(), "--db", db}, &code),
            "1/1");
  EXPECT_EQ(code, 0);
  fs::remove_all(dir);
}

// Neither command times anything in its own process: compile reads the
// stored times only, and tune times its packages (the records checked in
// the model, the backend's regions) on its workers, in their sandbox.
TEST(ImportOnce, TuneAndCompileRunNoPackageInTheirOwnProcess) {
  if (!fs::exists(kConv)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path dir = fs::temp_directory_path() / ("tessera_run_nothing_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string(), out = (dir / "t.tsr").string();
  int code = -1;
  const int64_t before = tessera::runtime::GraphExecutor::loaded_in_process();
  files_read_by(tessera::cli::run_tune,
                {"tessera", "tune", kConv.string(), "--trials", "4", "--batch", "4", "--db", db}, &code);
  EXPECT_EQ(code, 0);
  files_read_by(tessera::cli::run_compile, {"tessera", "compile", kConv.string(), "--db", db, "-o", out}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(tessera::runtime::GraphExecutor::loaded_in_process(), before);
  fs::remove_all(dir);
}

// A Ctrl-C after the search (the flag after_tuning is given) stops the
// check of the records and the region timing at once; nothing is stored of
// them, and the output says so.
TEST(ImportOnce, ACtrlCAfterTheSearchSkipsTheTimingAndSaysSo) {
  if (!fs::exists(kConv)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path dir = fs::temp_directory_path() / ("tessera_after_ctrl_c_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  tessera::driver::TuneRequest request;
  request.model = kConv.string();
  request.options = {{"trials", {"4"}}, {"batch", {"4"}}, {"db", {db}}};
  auto tuning = tessera::driver::Tuning::check(request);
  ASSERT_TRUE(tuning.is_ok()) << tuning.status().to_string();
  ASSERT_TRUE((*tuning)->import().is_ok());
  std::atomic<bool> stop{false}, cancel{false};
  auto summary = (*tuning)->run(nullptr, nullptr, &stop, &cancel);
  ASSERT_TRUE(summary.is_ok()) << summary.status().to_string();
  stop = true;  // Ctrl-C
  FILE* out = std::tmpfile();
  (*tuning)->after_tuning(out, false, &stop);
  std::rewind(out);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  (*tuning)->close();
  EXPECT_NE(text.find("stopped by Ctrl-C: the records were not checked in the model"), std::string::npos) << text;
  auto store = tessera::records::Store::open(db);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_TRUE(store->model_checks().value().empty());
  fs::remove_all(dir);
}

}  // namespace
