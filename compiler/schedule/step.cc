#include "compiler/schedule/step.h"

#include <nlohmann/json.hpp>

namespace tessera {
namespace {

using json = nlohmann::json;

constexpr struct {
  StepKind kind;
  const char* name;
} kStepNames[] = {
    {StepKind::kSplit, "split"},           {StepKind::kFuse, "fuse"},
    {StepKind::kReorder, "reorder"},       {StepKind::kAnnotate, "annotate"},
    {StepKind::kComputeAt, "compute_at"},  {StepKind::kComputeInline, "compute_inline"},
    {StepKind::kComputeRoot, "compute_root"}, {StepKind::kCacheRead, "cache_read"},
    {StepKind::kCacheWrite, "cache_write"}, {StepKind::kRfactor, "rfactor"},
    {StepKind::kPragma, "pragma"},         {StepKind::kPackLayout, "pack_layout"},
};

constexpr const char* kAnnotationNames[] = {"none", "parallel", "vectorize", "unroll"};

template <typename T>
std::string list_text(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

const char* step_kind_name(StepKind kind) {
  for (const auto& e : kStepNames)
    if (e.kind == kind) return e.name;
  return "?";
}

const char* annotation_name(IterAnnotation a) { return kAnnotationNames[static_cast<int>(a)]; }

bool Step::operator==(const Step& o) const {
  return kind == o.kind && stage == o.stage && iter == o.iter && factors == o.factors &&
         nparts == o.nparts && iters == o.iters && annotation == o.annotation &&
         target_stage == o.target_stage && target_iter == o.target_iter && value == o.value &&
         axis == o.axis;
}

std::string Step::to_string() const {
  std::string s = std::string(step_kind_name(kind)) + "(stage=" + std::to_string(stage);
  switch (kind) {
    case StepKind::kSplit:
      s += ", iter=" + std::to_string(iter);
      s += nparts ? ", nparts=" + std::to_string(nparts) : ", factors=" + list_text(factors);
      break;
    case StepKind::kFuse: s += ", iters=" + list_text(iters); break;
    case StepKind::kReorder: s += ", order=" + list_text(iters); break;
    case StepKind::kAnnotate:
      s += ", iter=" + std::to_string(iter) + ", " + annotation_name(annotation);
      break;
    case StepKind::kComputeAt:
      s += ", target=" + std::to_string(target_stage) + ", iter=" + std::to_string(target_iter);
      break;
    case StepKind::kCacheRead: s += ", readers=" + list_text(iters); break;
    case StepKind::kRfactor: case StepKind::kPackLayout:
      s += ", axis=" + std::to_string(axis) + ", factor=" + std::to_string(value);
      break;
    case StepKind::kPragma:
      s += ", iter=" + std::to_string(iter) + ", auto_unroll_max_step=" + std::to_string(value);
      break;
    case StepKind::kComputeInline: case StepKind::kComputeRoot: case StepKind::kCacheWrite:
      break;
  }
  return s + ")";
}

Step canonical_step(const Step& in) {
  Step out;
  out.kind = in.kind;
  out.stage = in.stage;
  switch (in.kind) {
    case StepKind::kSplit:
      out.iter = in.iter;
      if (in.nparts) out.nparts = in.nparts;
      else out.factors = in.factors;
      break;
    case StepKind::kFuse: case StepKind::kReorder: case StepKind::kCacheRead: out.iters = in.iters; break;
    case StepKind::kAnnotate:
      out.iter = in.iter;
      out.annotation = in.annotation;
      break;
    case StepKind::kComputeAt:
      out.target_stage = in.target_stage;
      out.target_iter = in.target_iter;
      break;
    case StepKind::kRfactor: case StepKind::kPackLayout:
      out.axis = in.axis;
      out.value = in.value;
      break;
    case StepKind::kPragma:
      out.iter = in.iter;
      out.value = in.value;
      break;
    case StepKind::kComputeInline: case StepKind::kComputeRoot: case StepKind::kCacheWrite:
      break;
  }
  return out;
}

std::string steps_to_json(const std::vector<Step>& steps) {
  json list = json::array();
  for (const Step& st : steps) {
    json j;
    j["kind"] = step_kind_name(st.kind);
    j["stage"] = st.stage;
    switch (st.kind) {
      case StepKind::kSplit:
        j["iter"] = st.iter;
        if (st.nparts) j["nparts"] = st.nparts;
        else j["factors"] = st.factors;
        break;
      case StepKind::kFuse: case StepKind::kReorder: j["iters"] = st.iters; break;
      case StepKind::kAnnotate:
        j["iter"] = st.iter;
        j["ann"] = annotation_name(st.annotation);
        break;
      case StepKind::kComputeAt:
        j["target"] = st.target_stage;
        j["iter"] = st.target_iter;
        break;
      case StepKind::kCacheRead: j["readers"] = st.iters; break;
      case StepKind::kRfactor: case StepKind::kPackLayout:
        j["axis"] = st.axis;
        j["factor"] = st.value;
        break;
      case StepKind::kPragma:
        j["iter"] = st.iter;
        j["auto_unroll_max_step"] = st.value;
        break;
      case StepKind::kComputeInline: case StepKind::kComputeRoot: case StepKind::kCacheWrite:
        break;
    }
    list.push_back(std::move(j));
  }
  return list.dump();
}

Result<std::vector<Step>> steps_from_json(const std::string& text) {
  json list = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.is_array())
    return Status(ErrorCode::kParseError, "step list is not a JSON array");
  std::vector<Step> steps;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& j = list[i];
    auto fail = [&](const std::string& why) {
      return Status(ErrorCode::kParseError, "step " + std::to_string(i) + ": " + why);
    };
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return fail("no \"kind\"");
    Step st;
    std::string kind = j["kind"];
    bool known = false;
    for (const auto& e : kStepNames) {
      if (kind == e.name) {
        st.kind = e.kind;
        known = true;
      }
    }
    if (!known) return fail("unknown kind \"" + kind + "\"");
    auto get_int = [&](const char* key, auto* out) -> bool {
      if (!j.contains(key) || !j[key].is_number_integer()) return false;
      *out = j[key].get<std::remove_pointer_t<decltype(out)>>();
      return true;
    };
    auto get_list = [&](const char* key, auto* out) -> bool {
      if (!j.contains(key) || !j[key].is_array()) return false;
      for (const json& x : j[key]) {
        if (!x.is_number_integer()) return false;
        out->push_back(x.get<typename std::remove_pointer_t<decltype(out)>::value_type>());
      }
      return true;
    };
    if (!get_int("stage", &st.stage)) return fail("missing integer \"stage\"");
    bool ok = true;
    switch (st.kind) {
      case StepKind::kSplit:
        ok = get_int("iter", &st.iter) && (get_int("nparts", &st.nparts) || get_list("factors", &st.factors));
        break;
      case StepKind::kFuse: case StepKind::kReorder: ok = get_list("iters", &st.iters); break;
      case StepKind::kAnnotate: {
        ok = get_int("iter", &st.iter) && j.contains("ann") && j["ann"].is_string();
        if (ok) {
          std::string ann = j["ann"];
          ok = false;
          for (int a = 0; a < 4; ++a) {
            if (ann == kAnnotationNames[a]) {
              st.annotation = static_cast<IterAnnotation>(a);
              ok = true;
            }
          }
        }
        break;
      }
      case StepKind::kComputeAt: ok = get_int("target", &st.target_stage) && get_int("iter", &st.target_iter); break;
      case StepKind::kCacheRead: ok = get_list("readers", &st.iters); break;
      case StepKind::kRfactor: case StepKind::kPackLayout:
        ok = get_int("axis", &st.axis) && get_int("factor", &st.value);
        break;
      case StepKind::kPragma: ok = get_int("iter", &st.iter) && get_int("auto_unroll_max_step", &st.value); break;
      case StepKind::kComputeInline: case StepKind::kComputeRoot: case StepKind::kCacheWrite: break;
    }
    if (!ok) return fail("bad arguments for " + kind);
    steps.push_back(std::move(st));
  }
  return steps;
}

}  // namespace tessera
