#include "tools/args.h"

#include <cstdlib>
#include <sstream>

namespace tessera::cli {

Result<Args> Args::parse(int argc, char** argv, int first, const std::vector<OptionSpec>& specs) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string word = argv[i];
    if (word.size() == 2 && word[0] == '-' && word[1] != '-') {
      for (const auto& s : specs)
        if (s.short_name == word[1]) word = "--" + s.name;
      if (word.size() == 2) return Status(ErrorCode::kInvalidArgument, "unknown option " + word);
    }
    if (word.size() < 3 || word.compare(0, 2, "--") != 0) {
      args.positional_.push_back(word);
      continue;
    }
    std::string name = word.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::string accepted;
      for (const auto& s : specs) accepted += (accepted.empty() ? "--" : ", --") + s.name;
      return Status(ErrorCode::kInvalidArgument,
                    "unknown option --" + name + " (accepted: " + accepted + ")");
    }
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= argc)
        return Status(ErrorCode::kInvalidArgument, "option --" + name + " needs a value");
      value = argv[++i];
    } else if (!spec->takes_value && inline_value) {
      return Status(ErrorCode::kInvalidArgument, "option --" + name + " takes no value");
    }
    args.values_.emplace(name, value);
  }
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
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    return Status(ErrorCode::kInvalidArgument,
                  "option --" + name + " expects an integer, got '" + text + "'");
  return v;
}

Result<double> Args::get_double(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  std::string text = get(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    return Status(ErrorCode::kInvalidArgument,
                  "option --" + name + " expects a number, got '" + text + "'");
  return v;
}

std::string format_options(const std::vector<OptionSpec>& specs) {
  std::ostringstream os;
  for (const auto& s : specs) {
    std::string left = std::string(s.short_name ? "  -" + std::string(1, s.short_name) + ", " : "  ") + "--" +
                       s.name + (s.takes_value ? " VALUE" : "");
    os << left << std::string(left.size() < 26 ? 26 - left.size() : 1, ' ') << s.help << "\n";
  }
  return os.str();
}

}  // namespace tessera::cli
