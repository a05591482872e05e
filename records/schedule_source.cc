#include "records/schedule_source.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

namespace tessera::records {
namespace {

// x86 CPU names (LLVM's spelling) by the widest vector register their feature
// set enables. A name missing here leaves the width unknown unless -mattr
// says +avx512f: a guess could pair schedules tuned for different registers.
constexpr std::string_view kX86Cpus512[] = {
    "skylake-avx512", "cascadelake",   "cooperlake",   "cannonlake",     "icelake-client",
    "icelake-server", "tigerlake",     "rocketlake",   "sapphirerapids", "emeraldrapids",
    "graniterapids",  "graniterapids-d", "diamondrapids", "knl",          "knm",
    "znver4",         "znver5",        "x86-64-v4",    "skx"};
constexpr std::string_view kX86Cpus256[] = {
    "sandybridge", "corei7-avx",  "ivybridge",    "core-avx-i",  "haswell",
    "core-avx2",   "broadwell",   "skylake",      "alderlake",   "raptorlake",
    "meteorlake",  "arrowlake",   "arrowlake-s",  "lunarlake",   "pantherlake",
    "gracemont",   "sierraforest", "grandridge",  "clearwaterforest", "znver1",
    "znver2",      "znver3",      "x86-64-v3",    "btver2"};
constexpr std::string_view kX86Cpus128[] = {
    "generic",   "x86-64",   "x86-64-v2", "nehalem",  "corei7",   "westmere", "core2",
    "penryn",    "atom",     "bonnell",   "silvermont", "slm",    "goldmont", "goldmont-plus",
    "tremont",   "btver1",   "k8",        "amdfam10", "opteron"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view cpu) {
  return std::find(std::begin(names), std::end(names), cpu) != std::end(names);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::optional<int> x86_vector_bits(const std::string& cpu, const std::vector<std::string>& features) {
  std::optional<int> bits;
  if (listed(kX86Cpus512, cpu)) bits = 512;
  else if (listed(kX86Cpus256, cpu) || starts_with(cpu, "bdver")) bits = 256;  // bdver1-4: AVX
  else if (listed(kX86Cpus128, cpu)) bits = 128;
  // Features apply after the CPU's, in order, as LLVM applies them.
  for (const std::string& f : features) {
    if (f == "+avx512f") bits = 512;
    else if ((f == "+avx" || f == "+avx2") && bits) bits = std::max(*bits, 256);
    else if (f == "-avx512f" && bits) bits = std::min(*bits, 256);
    else if (f == "-avx") bits = 128;
  }
  return bits;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// What sets `other` apart from `asked`, for the candidate's `why`.
std::string difference(const TargetTraits& asked, const TargetTraits& other) {
  if (asked.cpu != other.cpu) return "CPU " + other.cpu + ", not " + asked.cpu;
  if (asked.features != other.features) return "other -mattr features";
  if (asked.num_cores != other.num_cores)
    return std::to_string(other.num_cores) + " cores, not " + std::to_string(asked.num_cores);
  return "spelled differently";
}

std::string rank_text(size_t rank, int64_t of) {
  return (rank == 0 ? std::string("best") : "#" + std::to_string(rank + 1)) + " of " + std::to_string(of) +
         (of == 1 ? " record" : " records");
}

ScheduleCandidate to_candidate(const Record& r, TargetMatch match, std::string why, int64_t considered) {
  ScheduleCandidate c;
  c.steps_json = r.steps_json;
  c.cost_s = r.mean_cost();
  c.target = r.target;
  c.match = match;
  c.why = std::move(why);
  c.record_id = r.id;
  c.device_key = r.device_key;
  c.considered = considered;
  return c;
}

}  // namespace

TargetTraits parse_target_traits(std::string_view target) {
  TargetTraits t;
  t.cpu = "generic";
  std::istringstream words{std::string(target)};
  std::string word;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "-mtriple") t.triple = value;
    else if (key == "-mcpu") t.cpu = value;
    else if (key == "-mattr") t.features = split_commas(value);
    else if (key == "-num-cores") t.num_cores = std::atoi(value.c_str());
  }
  if (starts_with(t.triple, "x86_64")) t.vector_bits = x86_vector_bits(t.cpu, t.features);
  else if (starts_with(t.triple, "aarch64") || starts_with(t.triple, "arm64")) t.vector_bits = 128;
  return t;
}

bool compatible_targets(const TargetTraits& a, const TargetTraits& b) {
  return !a.triple.empty() && a.triple == b.triple && a.vector_bits && b.vector_bits &&
         *a.vector_bits == *b.vector_bits;
}

Result<std::vector<ScheduleCandidate>> RecordsScheduleSource::candidates(const std::string& workload_key,
                                                                         const std::string& target) {
  if (!is_valid_workload_key(workload_key))
    return Status(ErrorCode::kInvalidArgument,
                  "workload key '" + workload_key + "' is not 32 lowercase hex characters");
  TESSERA_ASSIGN_OR_RETURN(std::vector<Record> best, store_.best_k(workload_key, target, k_));
  if (best.empty()) return compatible_candidates(workload_key, target);
  RecordFilter ok_here;
  ok_here.workload_key = workload_key;
  ok_here.target = target;
  ok_here.ok_only = true;
  TESSERA_ASSIGN_OR_RETURN(int64_t count, store_.count(ok_here));
  std::vector<ScheduleCandidate> out;
  for (size_t i = 0; i < best.size(); ++i)
    out.push_back(to_candidate(best[i], TargetMatch::kExact, rank_text(i, count) + " on this target", count));
  return out;
}

Result<std::vector<ScheduleCandidate>> RecordsScheduleSource::compatible_candidates(
    const std::string& workload_key, const std::string& target) {
  // The targets this workload was measured on, with their ok counts (a
  // std::map: visited in string order, so the result does not depend on
  // insertion order).
  std::map<std::string, int64_t> counts;
  RecordFilter of_workload;
  of_workload.workload_key = workload_key;
  of_workload.ok_only = true;
  TESSERA_RETURN_IF_ERROR(store_.for_each(of_workload, [&](const Record& r) {
    ++counts[r.target];
    return Status::ok();
  }));
  const TargetTraits asked = parse_target_traits(target);
  struct Ranked {
    Record record;
    size_t rank;
    int64_t count;
    std::string why;
  };
  std::vector<Ranked> pool;
  for (const auto& [other, count] : counts) {
    const TargetTraits traits = parse_target_traits(other);
    if (other == target || !compatible_targets(asked, traits)) continue;
    TESSERA_ASSIGN_OR_RETURN(std::vector<Record> best, store_.best_k(workload_key, other, k_));
    const std::string why_there = "on a compatible target (same " + traits.triple + " triple and " +
                                  std::to_string(*traits.vector_bits) + "-bit vectors; " +
                                  difference(asked, traits) + "): '" + other + "'";
    for (size_t i = 0; i < best.size(); ++i)
      pool.push_back({std::move(best[i]), i, count, rank_text(i, count) + " " + why_there});
  }
  std::stable_sort(pool.begin(), pool.end(), [](const Ranked& a, const Ranked& b) {
    const double ca = a.record.mean_cost(), cb = b.record.mean_cost();
    if (ca != cb) return ca < cb;
    if (a.record.target != b.record.target) return a.record.target < b.record.target;
    return a.record.id < b.record.id;
  });
  std::vector<ScheduleCandidate> out;
  for (size_t i = 0; i < pool.size() && static_cast<int64_t>(i) < k_; ++i)
    out.push_back(to_candidate(pool[i].record, TargetMatch::kCompatible, pool[i].why, pool[i].count));
  return out;
}

}  // namespace tessera::records
