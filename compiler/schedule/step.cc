#include "compiler/schedule/step.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

namespace tessera {
namespace {

using json = nlohmann::json;

// The JSON "kind" spelling of each alternative, in StepKind order.
constexpr const char* kStepNames[] = {
    "split",      "fuse",        "reorder", "annotate", "compute_at",  "compute_inline", "compute_root",
    "cache_read", "cache_write", "rfactor", "pragma",   "pack_layout", "pad_tile",       "storage_order",
};
static_assert(std::size(kStepNames) == std::variant_size_v<Step::Variant>);

constexpr const char* kAnnotationNames[] = {"none", "parallel", "vectorize", "unroll", "tensorize"};

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

template <typename T>
std::string list_text(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// FNV-1a over 64-bit words.
struct Hasher {
  uint64_t h = 0xcbf29ce484222325ULL;
  void add(int64_t x) {
    uint64_t u = static_cast<uint64_t>(x);
    for (int i = 0; i < 8; ++i, u >>= 8) h = (h ^ (u & 0xff)) * 0x100000001b3ULL;
  }
  template <typename T>
  void add_list(const std::vector<T>& v) {
    add(static_cast<int64_t>(v.size()));
    for (T x : v) add(static_cast<int64_t>(x));
  }
};

// The arguments of each kind, in JSON keys; the step's "kind" and "stage"
// are written by the caller.
json arguments(const Step& step) {
  json j = json::object();
  std::visit(Overloaded{
                 [&](const SplitStep& s) {
                   j["iter"] = s.iter;
                   if (s.nparts)
                     j["nparts"] = s.nparts;
                   else
                     j["factors"] = s.factors;
                 },
                 [&](const FuseStep& s) { j["iters"] = s.iters; },
                 [&](const ReorderStep& s) { j["iters"] = s.order; },
                 [&](const AnnotateStep& s) {
                   j["iter"] = s.iter;
                   j["ann"] = annotation_name(s.annotation);
                 },
                 [&](const ComputeAtStep& s) {
                   j["target"] = s.target_stage;
                   j["iter"] = s.target_iter;
                 },
                 [&](const CacheReadStep& s) { j["readers"] = s.readers; },
                 [&](const RfactorStep& s) {
                   j["axis"] = s.axis;
                   j["factor"] = s.factor;
                 },
                 [&](const PackLayoutStep& s) {
                   j["axis"] = s.axis;
                   j["factor"] = s.factor;
                   if (s.inner != 0) j["inner"] = s.inner;  // absent in records older than it
                 },
                 [&](const PragmaStep& s) {
                   j["iter"] = s.iter;
                   j["auto_unroll_max_step"] = s.auto_unroll_max_step;
                 },
                 [&](const ComputeInlineStep&) {},
                 [&](const ComputeRootStep&) {},
                 [&](const CacheWriteStep&) {},
                 [&](const PadTileStep&) {},
                 [&](const StorageOrderStep& s) { j["order"] = s.order; },
             },
             step.variant());
  return j;
}

// Reads one JSON step object; an empty optional's reason is in `why`.
class StepReader {
 public:
  explicit StepReader(const json& j) : j_(j) {}

  template <typename T>
  bool get_int(const char* key, T* out) const {
    if (!j_.contains(key) || !j_[key].is_number_integer()) return false;
    *out = j_[key].get<T>();
    return true;
  }
  template <typename T>
  bool get_list(const char* key, std::vector<T>* out) const {
    if (!j_.contains(key) || !j_[key].is_array()) return false;
    for (const json& x : j_[key]) {
      if (!x.is_number_integer()) return false;
      out->push_back(x.get<T>());
    }
    return true;
  }
  bool get_annotation(IterAnnotation* out) const {
    if (!j_.contains("ann") || !j_["ann"].is_string()) return false;
    const std::string ann = j_["ann"];
    for (int a = 0; a < static_cast<int>(std::size(kAnnotationNames)); ++a) {
      if (ann == kAnnotationNames[a]) {
        *out = static_cast<IterAnnotation>(a);
        return true;
      }
    }
    return false;
  }

  // The step of kind `kind` on `stage`, or nullopt when an argument is missing.
  std::optional<Step> read(StepKind kind, int stage) const {
    switch (kind) {
      case StepKind::kSplit: {
        SplitStep s;
        s.stage = stage;
        if (get_int("iter", &s.iter) && (get_int("nparts", &s.nparts) || get_list("factors", &s.factors))) return s;
        break;
      }
      case StepKind::kFuse: {
        FuseStep s;
        s.stage = stage;
        if (get_list("iters", &s.iters)) return s;
        break;
      }
      case StepKind::kReorder: {
        ReorderStep s;
        s.stage = stage;
        if (get_list("iters", &s.order)) return s;
        break;
      }
      case StepKind::kAnnotate: {
        AnnotateStep s;
        s.stage = stage;
        if (get_int("iter", &s.iter) && get_annotation(&s.annotation)) return s;
        break;
      }
      case StepKind::kComputeAt: {
        ComputeAtStep s;
        s.stage = stage;
        if (get_int("target", &s.target_stage) && get_int("iter", &s.target_iter)) return s;
        break;
      }
      case StepKind::kComputeInline: return ComputeInlineStep{stage};
      case StepKind::kComputeRoot: return ComputeRootStep{stage};
      case StepKind::kCacheRead: {
        CacheReadStep s;
        s.stage = stage;
        if (get_list("readers", &s.readers)) return s;
        break;
      }
      case StepKind::kCacheWrite: return CacheWriteStep{stage};
      case StepKind::kPadTile: return PadTileStep{stage};
      case StepKind::kRfactor: {
        RfactorStep s;
        s.stage = stage;
        if (get_int("axis", &s.axis) && get_int("factor", &s.factor)) return s;
        break;
      }
      case StepKind::kPragma: {
        PragmaStep s;
        s.stage = stage;
        if (get_int("iter", &s.iter) && get_int("auto_unroll_max_step", &s.auto_unroll_max_step)) return s;
        break;
      }
      case StepKind::kPackLayout: {
        PackLayoutStep s;
        s.stage = stage;
        if (get_int("axis", &s.axis) && get_int("factor", &s.factor) &&
            (!j_.contains("inner") || get_int("inner", &s.inner)))
          return s;
        break;
      }
      case StepKind::kStorageOrder: {
        StorageOrderStep s;
        s.stage = stage;
        if (get_list("order", &s.order)) return s;
        break;
      }
    }
    return std::nullopt;
  }

 private:
  const json& j_;
};

}  // namespace

const char* step_kind_name(StepKind kind) {
  const size_t i = static_cast<size_t>(kind);
  return i < std::size(kStepNames) ? kStepNames[i] : "?";
}

const char* annotation_name(IterAnnotation a) {
  return kAnnotationNames[static_cast<int>(a)];
}

int Step::stage() const {
  return std::visit([](const auto& s) { return s.stage; }, v_);
}

std::string Step::to_string() const {
  std::string s = std::string(step_kind_name(kind())) + "(stage=" + std::to_string(stage());
  std::visit(Overloaded{
                 [&](const SplitStep& x) {
                   s += ", iter=" + std::to_string(x.iter);
                   s += x.nparts ? ", nparts=" + std::to_string(x.nparts) : ", factors=" + list_text(x.factors);
                 },
                 [&](const FuseStep& x) { s += ", iters=" + list_text(x.iters); },
                 [&](const ReorderStep& x) { s += ", order=" + list_text(x.order); },
                 [&](const AnnotateStep& x) {
                   s += ", iter=" + std::to_string(x.iter) + ", " + annotation_name(x.annotation);
                 },
                 [&](const ComputeAtStep& x) {
                   s += ", target=" + std::to_string(x.target_stage) + ", iter=" + std::to_string(x.target_iter);
                 },
                 [&](const CacheReadStep& x) { s += ", readers=" + list_text(x.readers); },
                 [&](const RfactorStep& x) {
                   s += ", axis=" + std::to_string(x.axis) + ", factor=" + std::to_string(x.factor);
                 },
                 [&](const PackLayoutStep& x) {
                   s += ", axis=" + std::to_string(x.axis) + ", factor=" + std::to_string(x.factor);
                   if (x.inner != 0) s += ", inner=" + std::to_string(x.inner);
                 },
                 [&](const PragmaStep& x) {
                   s += ", iter=" + std::to_string(x.iter) +
                        ", auto_unroll_max_step=" + std::to_string(x.auto_unroll_max_step);
                 },
                 [&](const ComputeInlineStep&) {},
                 [&](const ComputeRootStep&) {},
                 [&](const CacheWriteStep&) {},
                 [&](const PadTileStep&) {},
                 [&](const StorageOrderStep& x) { s += ", order=" + list_text(x.order); },
             },
             v_);
  return s + ")";
}

Step canonical_step(const Step& step) {
  if (const SplitStep* s = step.as<SplitStep>(); s && s->nparts && !s->factors.empty())
    return SplitStep{.stage = s->stage, .iter = s->iter, .factors = {}, .nparts = s->nparts};
  return step;
}

uint64_t hash_step(const Step& step) {
  Hasher h;
  h.add(static_cast<int64_t>(step.kind()));
  h.add(step.stage());
  std::visit(Overloaded{
                 [&](const SplitStep& x) {
                   h.add(x.iter);
                   h.add_list(x.factors);
                   h.add(x.nparts);
                 },
                 [&](const FuseStep& x) { h.add_list(x.iters); },
                 [&](const ReorderStep& x) { h.add_list(x.order); },
                 [&](const AnnotateStep& x) {
                   h.add(x.iter);
                   h.add(static_cast<int64_t>(x.annotation));
                 },
                 [&](const ComputeAtStep& x) {
                   h.add(x.target_stage);
                   h.add(x.target_iter);
                 },
                 [&](const CacheReadStep& x) { h.add_list(x.readers); },
                 [&](const RfactorStep& x) {
                   h.add(x.axis);
                   h.add(x.factor);
                 },
                 [&](const PackLayoutStep& x) {
                   h.add(x.axis);
                   h.add(x.factor);
                   if (x.inner != 0) h.add(x.inner);  // older steps hash as before
                 },
                 [&](const PragmaStep& x) {
                   h.add(x.iter);
                   h.add(x.auto_unroll_max_step);
                 },
                 [&](const ComputeInlineStep&) {},
                 [&](const ComputeRootStep&) {},
                 [&](const CacheWriteStep&) {},
                 [&](const PadTileStep&) {},
                 [&](const StorageOrderStep& x) { h.add_list(x.order); },
             },
             step.variant());
  return h.h;
}

uint64_t hash_steps(const std::vector<Step>& steps) {
  Hasher h;
  h.add(static_cast<int64_t>(steps.size()));
  for (const Step& s : steps) h.add(static_cast<int64_t>(hash_step(s)));
  return h.h;
}

std::string steps_to_json(const std::vector<Step>& steps) {
  json list = json::array();
  for (const Step& st : steps) {
    json j = arguments(st);
    j["kind"] = step_kind_name(st.kind());
    j["stage"] = st.stage();
    list.push_back(std::move(j));
  }
  return list.dump();
}

Result<std::vector<Step>> steps_from_json(const std::string& text) {
  json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_array()) return Status(ErrorCode::kParseError, "step list is not a JSON array");
  std::vector<Step> steps;
  steps.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    auto fail = [&](const std::string& why) {
      return Status(ErrorCode::kParseError, "step " + std::to_string(i) + ": " + why);
    };
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return fail("no \"kind\"");
    const std::string kind = j["kind"];
    const auto* name =
        std::find_if(std::begin(kStepNames), std::end(kStepNames), [&](const char* n) { return kind == n; });
    if (name == std::end(kStepNames)) return fail("unknown kind \"" + kind + "\"");
    StepReader reader(j);
    int stage = 0;
    if (!reader.get_int("stage", &stage)) return fail("missing integer \"stage\"");
    std::optional<Step> step = reader.read(static_cast<StepKind>(name - std::begin(kStepNames)), stage);
    if (!step) return fail("bad arguments for " + kind);
    steps.push_back(std::move(*step));
  }
  return steps;
}

}  // namespace tessera
