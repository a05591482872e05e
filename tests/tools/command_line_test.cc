// The command line as a user meets it: -h/--help on every command and
// subcommand, `tessera help CMD`, `tessera --version` from the build, one
// placeholder per option across all commands, one-line errors with exit 2,
// and the operators `space --help` lists straight from the op spec table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/version.h"
#include "compiler/ops/op_spec.h"
#include "tests/tools/command.h"

namespace {

using tessera::test::Output;
using tessera::test::tessera;

// Every command and subcommand a user can ask for help on.
const std::vector<std::string> kCommands = {
    "space",         "tune",           "compile",        "run",           "records",     "records list", "records best",
    "records stats", "records export", "records import", "records prune", "records why", "tracker",      "worker",
    "farm",          "farm status",    "keys",           "keys generate", "report",
};

TEST(CommandLine, EveryCommandAnswersDashHAndDashDashHelp) {
  for (const std::string& command : kCommands) {
    for (const char* flag : {" -h", " --help"}) {
      Output out = tessera(command + flag);
      EXPECT_EQ(out.code, 0) << command << flag << "\n" << out.text;
      EXPECT_EQ(out.text.rfind("usage: tessera " + command, 0), 0u) << command << flag << "\n" << out.text;
    }
  }
}

TEST(CommandLine, HelpCmdPrintsThatCommandsHelp) {
  EXPECT_EQ(tessera("help --help").text, tessera("help").text);
  for (const std::string& command : std::vector<std::string>{"tune", "records", "records prune", "worker", "space"}) {
    Output help = tessera("help " + command), direct = tessera(command + " --help");
    EXPECT_EQ(help.code, 0) << help.text;
    EXPECT_EQ(help.text, direct.text) << command;
  }
  EXPECT_NE(tessera("help tune").text, tessera("help").text);
  Output unknown = tessera("help tunes");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.text.rfind("tessera: unknown command 'tunes'", 0), 0u) << unknown.text;
}

TEST(CommandLine, VersionComesFromTheBuild) {
  Output out = tessera("--version");
  EXPECT_EQ(out.code, 0);
  EXPECT_EQ(out.text, "tessera " + std::string(tessera::kToolVersion) + "\nLLVM " + tessera::kLlvmVersion + "\n");
  EXPECT_NE(out.text.find(TESSERA_PROJECT_VERSION), std::string::npos);
}

TEST(CommandLine, TheBoardsBinariesSayTheirVersion) {
  for (const auto& [binary, name] :
       {std::pair{TESSERA_RUN_BINARY, "tessera-run"}, {TESSERA_WORKER_BINARY, "tessera-worker"}}) {
    Output out = tessera::test::shell(std::string(binary) + " --version");
    EXPECT_EQ(out.code, 0) << out.text;
    EXPECT_EQ(out.text, std::string(name) + " " + TESSERA_PROJECT_VERSION + "\n");
  }
}

// The board's worker is `tessera worker` alone: the same options and help,
// laid out as every command's, under its own name.
TEST(CommandLine, TheBoardsWorkerIsTheWorkerCommandUnderItsOwnName) {
  Output board = tessera::test::shell(std::string(TESSERA_WORKER_BINARY) + " -h");
  Output tool = tessera("worker --help");
  ASSERT_EQ(board.code, 0) << board.text;
  std::string expected = tool.text;
  for (size_t at = expected.find("tessera worker"); at != std::string::npos; at = expected.find("tessera worker"))
    expected.replace(at, 14, "tessera-worker");
  EXPECT_EQ(board.text, expected);
  EXPECT_NE(board.text.find("\noptions:\n  --tracker ENDPOINT"), std::string::npos) << board.text;
  Output slip = tessera::test::shell(std::string(TESSERA_WORKER_BINARY) + " --trackr ipc:///nonexistent --key k");
  EXPECT_EQ(slip.code, 2);
  EXPECT_EQ(slip.text, "tessera-worker: unknown option --trackr: did you mean --tracker?\n");
  Output range = tessera::test::shell(std::string(TESSERA_WORKER_BINARY) + " --tracker ipc:///x --key k --max-jobs 0");
  EXPECT_EQ(range.code, 2);
  EXPECT_EQ(range.text, "tessera-worker: option --max-jobs expects an integer in 1-256, got '0'\n");
}

TEST(CommandLine, UnknownOptionIsAOneLineUsageError) {
  for (const std::string& command : kCommands) {
    if (command == "records") continue;  // its first word names a subcommand: below
    Output out = tessera(command + " --bogus-option 3");
    EXPECT_EQ(out.code, 2) << command << "\n" << out.text;
    const std::string first_line = out.text.substr(0, out.text.find('\n'));
    EXPECT_EQ(first_line.rfind("tessera " + command.substr(0, command.find(' ')), 0), 0u) << out.text;
    EXPECT_NE(first_line.find("unknown option --bogus-option"), std::string::npos) << command << "\n" << out.text;
  }
  Output records = tessera("records --bogus-option");
  EXPECT_EQ(records.code, 2);
  EXPECT_EQ(records.text.rfind("tessera records: unknown command '--bogus-option'\n", 0), 0u) << records.text;
}

// A slip of the keyboard gets the nearest option or command; messages are
// for people, without the internal status names.
TEST(CommandLine, ASlipGetsDidYouMeanAndMessagesCarryNoStatusNames) {
  Output option = tessera("tune --trails 5 --op matmul:M=8,N=8,K=8");
  EXPECT_EQ(option.code, 2);
  EXPECT_EQ(option.text, "tessera tune: unknown option --trails: did you mean --trials?\n");
  Output command = tessera("compil model.onnx");
  EXPECT_EQ(command.code, 2);
  EXPECT_EQ(command.text.rfind("tessera: unknown command 'compil': did you mean 'compile'?", 0), 0u) << command.text;
  Output sub = tessera("records lst");
  EXPECT_EQ(sub.code, 2);
  EXPECT_EQ(sub.text.rfind("tessera records: unknown command 'lst': did you mean 'list'?", 0), 0u) << sub.text;
  Output far = tessera("tune --zzzzzz 5");
  EXPECT_NE(far.text.find("(accepted: "), std::string::npos) << far.text;  // nothing near: the list
  Output missing = tessera("compile /nonexistent/model.onnx -o /tmp/never.tsr");
  EXPECT_EQ(missing.code, 1) << missing.text;
  EXPECT_EQ(missing.text.rfind("tessera compile: /nonexistent/model.onnx: ", 0), 0u) << missing.text;
  for (const char* name : {"not-found:", "invalid-argument:", "parse-error:", "io-error:"})
    EXPECT_EQ(missing.text.find(name), std::string::npos) << missing.text;
}

TEST(CommandLine, FlagsAndValuesAreCheckedInOneLine) {
  Output flag = tessera("tune --op matmul:M=8,N=8,K=8 --insecure=yes");
  EXPECT_EQ(flag.code, 2);
  EXPECT_EQ(flag.text, "tessera tune: option --insecure takes no value\n");
  Output value = tessera("tune --op matmul:M=8,N=8,K=8 --trials");
  EXPECT_EQ(value.code, 2);
  EXPECT_EQ(value.text, "tessera tune: option --trials needs a value\n");
  Output followed = tessera("tune --op --trials 3");
  EXPECT_EQ(followed.code, 2);
  EXPECT_EQ(followed.text, "tessera tune: option --op needs a value\n");
}

// --time stops a tune whose trials would take far longer, saying so; the
// run ends cleanly (exit 0) with what it measured stored.
TEST(CommandLine, TuneStopsAtItsTimeBudget) {
  const std::string dir = "/tmp/tessera_time_budget_" + std::to_string(getpid());
  const std::string db = dir + "/t.db";
  ASSERT_EQ(tessera::test::shell("mkdir -p " + dir).code, 0);
  const auto start = std::chrono::steady_clock::now();
  Output tuned = tessera(
      "tune --op matmul:M=32,N=32,K=32 --trials 100000 --batch 8 --repeat 1 --min-repeat-ms 1 --time 3s --db " + db);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tuned.code, 0) << tuned.text;
  EXPECT_NE(tuned.text.find("the time budget (3 s) ran out after "), std::string::npos) << tuned.text;
  EXPECT_LT(seconds, 60) << tuned.text;
  tessera::test::shell("rm -rf " + dir);
}

TEST(CommandLine, LongDescriptionsWrapUnderTheirColumn) {
  const std::string text = tessera("tune --help").text;
  size_t longest = 0;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    longest = std::max(longest, end - at);
  }
  EXPECT_LE(longest, 100u) << text;
  EXPECT_NE(text.find("\n" + std::string(30, ' ') + "afresh"), std::string::npos) << text;
}

// Every "--name PLACEHOLDER" in every help text: a name has one placeholder.
TEST(CommandLine, EachOptionHasOnePlaceholderEverywhere) {
  std::map<std::string, std::set<std::string>> seen;
  const std::regex option("--([a-z][a-z-]*)[ =]([A-Z][A-Za-z0-9.:|,=_-]*)");
  for (const std::string& command : kCommands) {
    const std::string text = tessera(command + " --help").text;
    for (std::sregex_iterator it(text.begin(), text.end(), option), end; it != end; ++it)
      seen[(*it)[1]].insert((*it)[2]);
  }
  EXPECT_EQ(seen["db"], std::set<std::string>{"DB"});
  EXPECT_EQ(seen["key"], std::set<std::string>{"KEY"});
  EXPECT_EQ(seen["tracker"], std::set<std::string>{"ENDPOINT"});
  // One spelling for what a command writes, --output (-o): a package for
  // compile, a directory for keys, a file for records export and report.
  // The old --out is read still but shown nowhere.
  EXPECT_EQ(seen.count("out"), 0u);
  EXPECT_EQ(seen["output"], (std::set<std::string>{"DIR", "FILE", "MODEL.tsr"}));
  seen.erase("output");
  for (const auto& [name, placeholders] : seen) {
    std::string all;
    for (const auto& p : placeholders) all += " " + p;
    EXPECT_EQ(placeholders.size(), 1u) << "--" << name << " is shown as" << all;
  }
}

// Scripts written for the old spelling keep working: --out and --out=X are
// --output where a command has it (and an unknown option elsewhere).
TEST(CommandLine, TheOldOutSpellingIsReadAsOutput) {
  const std::string dir = ::testing::TempDir() + "tessera_out_spelling_" + std::to_string(::getpid());
  Output a = tessera("keys generate --out " + dir + " --name a");
  EXPECT_EQ(a.code, 0) << a.text;
  Output b = tessera("keys generate --out=" + dir + " --name b");
  EXPECT_EQ(b.code, 0) << b.text;
  EXPECT_NE(a.text.find(dir + "/a.key"), std::string::npos) << a.text;
  EXPECT_NE(b.text.find(dir + "/b.key"), std::string::npos) << b.text;
  Output run = tessera("run --out x.tsr");
  EXPECT_EQ(run.code, 2) << run.text;
  (void)tessera::test::shell("rm -rf " + dir);
}

TEST(CommandLine, SpaceHelpListsEveryOperatorWithItsParameters) {
  Output out = tessera("space --help");
  ASSERT_EQ(out.code, 0);
  const std::vector<tessera::ops::OpInfo> ops = tessera::ops::list_ops();
  ASSERT_GT(ops.size(), 10u);
  for (const auto& op : ops) {
    const size_t at = out.text.find("\n  " + op.usage() + "\n");
    ASSERT_NE(at, std::string::npos) << op.name << "\n" << out.text;
    size_t end = at + 1;  // the entry ends where the next line indented by two starts
    do end = out.text.find("\n  ", end + 1);
    while (end != std::string::npos && out.text.compare(end, 4, "\n   ") == 0);
    const std::string entry = out.text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    EXPECT_NE(entry.find(op.summary), std::string::npos) << entry;
    for (const auto& p : op.params)
      if (!p.help.empty()) {
        EXPECT_NE(entry.find(p.name + ": " + p.help), std::string::npos) << entry;
      }
  }
}

}  // namespace
