// The command-line parser shared by every `tessera` subcommand, on CLI11.
//
// Each subcommand describes its options once, as a table of OptionSpec; CLI11
// parses against it and lays out its help. Grammar: positional words and
// `--name VALUE` / `--name=VALUE` options; `--flag` alone is a boolean.
// Options may repeat (`--op a --op b`). An option with a short_name also
// answers to `-x VALUE`; `help` answers to `-h` too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::cli {

/// What one subcommand accepts: option names (without "--") and whether each
/// takes a value. Unknown options are a user error listing the accepted ones.
struct OptionSpec {
  std::string name;
  bool takes_value = true;
  std::string help;
  char short_name = 0;          ///< a one-letter alias, `-o`, when not 0
  std::string value_name = "";  ///< the value's placeholder in help, when not placeholder(name)
};

/// Parsed arguments of one subcommand.
class Args {
 public:
  /// Parses argv[first..argc) against `specs`. A user error (one line: the
  /// option and what is wrong) for an unknown option, a missing value or a
  /// value given to a flag.
  static Result<Args> parse(int argc, char** argv, int first, const std::vector<OptionSpec>& specs);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  /// The last value given for `name`, or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  /// Every value given for a repeatable option, in order.
  std::vector<std::string> get_all(const std::string& name) const;
  /// An integer option; a user error when it is not an integer.
  Result<long long> get_int(const std::string& name, long long fallback) const;
  Result<double> get_double(const std::string& name, double fallback) const;

 private:
  std::vector<std::string> positional_;
  std::multimap<std::string, std::string> values_;
};

/// The placeholder of an option's value in help texts, one for each option
/// name across all commands (`--db DB`, `--tracker HOST:PORT`, `--trials N`);
/// "VALUE" for a name the table does not know.
std::string placeholder(const std::string& option_name);

/// The candidate nearest to `word` by edit distance (insertions, deletions,
/// substitutions and swaps of neighbours), when it is near enough to be a
/// slip of the keyboard (a third of its length, at least 1, at most 3
/// edits); "" otherwise: what "did you mean ...?" suggests.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

/// The "options:" block of a usage message: one "  --name PLACEHOLDER  help"
/// line per option, laid out by CLI11.
std::string format_options(const std::vector<OptionSpec>& specs);

}  // namespace tessera::cli
