#include "tools/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>

namespace tessera::cli {
namespace {

constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpColumn = 30;  // where descriptions start

// One placeholder per option name, whatever the command: the help of every
// command names a value the same way.
const std::map<std::string, std::string>& placeholders() {
  static const std::map<std::string, std::string> table = {
      {"authorized", "DIR"},
      {"batch", "N"},
      {"bench", "N"},
      {"bind", "ENDPOINT"},
      {"byoc", "BACKEND"},
      {"cache", "model|warm|cold"},
      {"db", "DB"},
      {"dead-after-ms", "MS"},
      {"dump-after", "PASS"},
      {"early-stopping", "N"},
      {"errors-older-than", "AGE"},
      {"heartbeat-ms", "MS"},
      {"input", "NAME=FILE"},
      {"input-shape", "NAME:D,..."},
      {"input-value", "NAME=VALUE"},
      {"jobs", "N"},
      {"k", "N"},
      {"keep", "N"},
      {"key", "KEY"},
      {"keyfile", "NAME.key"},
      {"limit", "N"},
      {"log-level", "LEVEL"},
      {"max-jobs", "N"},
      {"max-library-mb", "MB"},
      {"min-repeat-ms", "MS"},
      {"name", "NAME"},
      {"no-worker-grace-ms", "MS"},
      {"op", "SPEC"},
      {"out", "PATH"},
      {"output", "MODEL.tsr"},
      {"output-dir", "DIR"},
      {"prior-db", "DB"},
      {"profile", "N"},
      {"random-inputs", "SEED"},
      {"repeat", "N"},
      {"samples", "N"},
      {"scheduler", "gradient|round-robin"},
      {"seed", "SEED"},
      {"space", "SPACE"},
      {"strategy", "STRATEGY"},
      {"target", "TARGET"},
      {"threads", "N"},
      {"time", "DURATION"},
      {"time-budget", "SECONDS"},
      {"timeout", "SECONDS"},
      {"timeout-ms", "MS"},
      {"tracker", "ENDPOINT"},
      {"tracker-key", "NAME.pub"},
      {"trials", "N"},
      {"warmup", "N"},
      {"workers", "N"},
      {"workload", "KEY"},
  };
  return table;
}

// The range of each numeric option, whatever the command: checked at parse
// time, so no command sees a negative count, a NaN, an infinity or a number
// that wrapped. Bounds are inclusive; `integer` options take no fraction.
struct NumericRange {
  bool integer;
  double min, max;  // for integers, exact up to 2^53; kNoIntegerMax: any that fits in 64 bits
};
constexpr double kNoIntegerMax = -1;

const std::map<std::string, NumericRange>& numeric_ranges() {
  static const std::map<std::string, NumericRange> table = {
      {"batch", {true, 1, 65536}},         {"early-stopping", {true, 0, 1e9}}, {"min-repeat-ms", {false, 0, 60000}},
      {"heartbeat-ms", {true, 50, 60000}}, {"max-jobs", {true, 1, 256}},       {"max-library-mb", {true, 1, 4096}},
      {"repeat", {true, 1, 1000}},         {"seed", {true, 0, kNoIntegerMax}}, {"threads", {true, 0, 4096}},
      {"time-budget", {false, 0, 1e7}},    {"timeout", {false, 0.001, 3600}},  {"trials", {true, 1, 1e8}},
      {"worker-wait", {false, 0, 86400}},  {"workers", {true, 1, 1024}},
  };
  return table;
}

std::string range_text(const NumericRange& r) {
  if (r.integer)
    return "an integer in " + std::to_string(static_cast<long long>(r.min)) + "-" +
           (r.max == kNoIntegerMax ? std::to_string(std::numeric_limits<long long>::max())
                                   : std::to_string(static_cast<long long>(r.max)));
  std::ostringstream out;
  out << "a number in " << r.min << "-" << r.max;
  return out.str();
}

// One line: the option, what it takes and what it got.
Status check_numeric(const std::string& name, const std::string& text) {
  auto it = numeric_ranges().find(name);
  if (it == numeric_ranges().end()) return Status::ok();
  const NumericRange& r = it->second;
  char* end = nullptr;
  errno = 0;
  bool in_range = false;
  if (r.integer) {
    const long long v = std::strtoll(text.c_str(), &end, 10);
    in_range = v >= static_cast<long long>(r.min) && (r.max == kNoIntegerMax || v <= static_cast<long long>(r.max));
  } else {
    const double v = std::strtod(text.c_str(), &end);
    in_range = std::isfinite(v) && v >= r.min && v <= r.max;
  }
  const bool parsed = !text.empty() && *end == '\0' && errno != ERANGE;
  if (!parsed || !in_range)
    return Status(ErrorCode::kInvalidArgument,
                  "option --" + name + " expects " + range_text(r) + ", got '" + text + "'");
  return Status::ok();
}

// The names CLI11 knows an option by: "--name", "-x" for a short alias, and
// "-h" for help (unless a command gave -h to something else).
std::string cli11_names(const OptionSpec& spec, const std::vector<OptionSpec>& specs) {
  std::string names = "--" + spec.name;
  if (spec.short_name) names = "-" + std::string(1, spec.short_name) + "," + names;
  const bool h_taken = std::any_of(specs.begin(), specs.end(), [](const OptionSpec& s) { return s.short_name == 'h'; });
  if (spec.name == "help" && !spec.takes_value && !h_taken) names = "-h," + names;
  return names;
}

// A CLI11 app that knows `specs`; each option's values land in `values`
// (one entry per occurrence), each flag's count in `counts`. Help is an
// option like the others: the command decides what it prints.
void describe(CLI::App& app, const std::vector<OptionSpec>& specs,
              std::map<std::string, std::vector<std::string>>& values, std::map<std::string, int>& counts) {
  app.set_help_flag();
  app.allow_extras();  // unknown words come back in order: positionals, or an error in our words
  auto formatter = std::make_shared<CLI::Formatter>();
  formatter->column_width(static_cast<int>(kHelpColumn));
  app.formatter(formatter);
  for (const OptionSpec& spec : specs) {
    const std::string names = cli11_names(spec, specs);
    if (spec.takes_value) {
      app.add_option(names, values[spec.name], spec.help)
          ->type_name(spec.value_name.empty() ? placeholder(spec.name) : spec.value_name)
          ->expected(1)
          ->allow_extra_args(false)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      app.add_flag(names, counts[spec.name], spec.help);
    }
  }
}

bool is_option_word(const std::string& word) {
  if (word.size() == 2) return word[0] == '-' && word[1] != '-';
  return word.size() >= 3 && word.compare(0, 2, "--") == 0;
}

// Damerau-Levenshtein distance (optimal string alignment).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string accepted_list(const std::vector<OptionSpec>& specs) {
  std::string accepted;
  for (const auto& s : specs) accepted += (accepted.empty() ? "--" : ", --") + s.name;
  return accepted;
}

// The one-line errors the hand-written parser gave, for what CLI11 would
// word differently: a flag with a value, an option without one.
Status check_values(int argc, char** argv, int first, const std::vector<OptionSpec>& specs) {
  for (int i = first; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.size() < 3 || word.compare(0, 2, "--") != 0) continue;
    const size_t eq = word.find('=');
    const std::string name = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    for (const OptionSpec& s : specs) {
      if (s.name != name) continue;
      if (!s.takes_value && eq != std::string::npos)
        return Status(ErrorCode::kInvalidArgument, "option --" + name + " takes no value");
      // At the end, or followed by another of the command's options.
      const bool next_is_option = i + 1 < argc && std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& o) {
                                    const std::string next = argv[i + 1];
                                    return next == "--" + o.name || next.rfind("--" + o.name + "=", 0) == 0;
                                  });
      if (s.takes_value && eq == std::string::npos && (i + 1 >= argc || next_is_option))
        return Status(ErrorCode::kInvalidArgument, "option --" + name + " needs a value");
    }
  }
  return Status::ok();
}

// A long description continues on lines of its own, under its column.
std::string wrap(const std::string& block) {
  std::string out, line;
  std::istringstream lines(block);
  while (std::getline(lines, line)) {
    while (line.size() > kHelpWidth) {
      const size_t cut = line.rfind(' ', kHelpWidth);
      if (cut == std::string::npos || cut <= kHelpColumn) break;
      out += line.substr(0, cut) + "\n";
      line = std::string(kHelpColumn, ' ') + line.substr(cut + 1);
    }
    out += line + "\n";
  }
  return out;
}

// Spellings an option had before every command spelled it one way, still
// read where the command has the new one: `--out` (keys, records export,
// report) is `--output`, as in compile.
void respell_old_options(std::vector<std::string>& words, const std::vector<OptionSpec>& specs) {
  static const std::pair<const char*, const char*> kOld[] = {{"out", "output"}};
  for (const auto& [old_name, name] : kOld) {
    const bool takes_new = std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
    const bool takes_old =
        std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == old_name; });
    if (!takes_new || takes_old) continue;
    const std::string word = std::string("--") + old_name;
    for (std::string& w : words)
      if (w == word || w.rfind(word + "=", 0) == 0) w = std::string("--") + name + w.substr(word.size());
  }
}

}  // namespace

std::string placeholder(const std::string& option_name) {
  auto it = placeholders().find(option_name);
  return it == placeholders().end() ? "VALUE" : it->second;
}

Result<Args> Args::parse(int argc, char** argv, int first, const std::vector<OptionSpec>& specs) {
  TESSERA_RETURN_IF_ERROR(check_values(argc, argv, first, specs));
  CLI::App app;
  std::map<std::string, std::vector<std::string>> values;
  std::map<std::string, int> counts;
  describe(app, specs, values, counts);
  std::vector<std::string> words(argv + first, argv + argc);
  respell_old_options(words, specs);
  std::reverse(words.begin(), words.end());  // CLI11 takes them last first
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    // "--op: 1 required SPEC missing": an option followed by another option.
    if (e.get_name() == "ArgumentMismatch" && message.rfind("--", 0) == 0)
      message = "option " + message.substr(0, message.find(':')) + " needs a value";
    return Status(ErrorCode::kInvalidArgument, message);
  }
  Args args;
  for (const std::string& word : app.remaining()) {
    if (!is_option_word(word)) {
      args.positional_.push_back(word);
      continue;
    }
    const std::string name = word.substr(0, word.find('='));
    if (name.size() == 2) return Status(ErrorCode::kInvalidArgument, "unknown option " + name);
    std::vector<std::string> names;
    for (const OptionSpec& s : specs) names.push_back("--" + s.name);
    if (const std::string near = nearest_word(name, names); !near.empty())
      return Status(ErrorCode::kInvalidArgument, "unknown option " + name + ": did you mean " + near + "?");
    return Status(ErrorCode::kInvalidArgument, "unknown option " + name + " (accepted: " + accepted_list(specs) + ")");
  }
  for (const auto& [name, given] : values)
    for (const std::string& v : given) {
      TESSERA_RETURN_IF_ERROR(check_numeric(name, v));
      args.values_.emplace(name, v);
    }
  for (const auto& [name, count] : counts)
    if (count > 0) args.values_.emplace(name, "");
  return args;
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto range = values_.equal_range(name);
  if (range.first == range.second) return fallback;
  return std::prev(range.second)->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

Result<long long> Args::get_int(const std::string& name, long long fallback) const {
  if (!has(name)) return fallback;
  std::string text = get(name);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return Status(ErrorCode::kInvalidArgument, "option --" + name + " expects an integer, got '" + text + "'");
  return v;
}

Result<double> Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  std::string text = get(name);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    return Status(ErrorCode::kInvalidArgument, "option --" + name + " expects a number, got '" + text + "'");
  return v;
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (best.empty() || d < best_distance) best = c, best_distance = d;
  }
  const size_t allowed = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
  return !best.empty() && best_distance <= allowed ? best : std::string();
}

std::string format_options(const std::vector<OptionSpec>& specs) {
  CLI::App app;
  std::map<std::string, std::vector<std::string>> values;
  std::map<std::string, int> counts;
  describe(app, specs, values, counts);
  auto formatter = std::make_shared<CLI::Formatter>();
  formatter->column_width(static_cast<int>(kHelpColumn));
  std::string text = formatter->make_groups(&app, CLI::AppFormatMode::Normal);
  // CLI11 heads the block "\nOptions:\n"; the usage before it ends a line already.
  if (auto at = text.find("Options:"); at != std::string::npos) text.replace(0, at + 8, "options:");
  return wrap(text);
}

}  // namespace tessera::cli
