#include "compiler/model/package_layout.h"

#include <map>
#include <set>
#include <tuple>

namespace tessera::model {

namespace {

using graph::Graph;
using graph::OpKind;
using graph::ValueId;
using runtime::CallKind;
using runtime::ValueKind;

// One plan being laid out: the model's, or a branch's or a loop body's,
// whose values are its own and whose tasks are the model's by a map.
struct Scope {
  const ModelPlan& plan;
  std::vector<int> tasks;  // the plan's task t is the package's kernel tasks[t]
  bool top = false;        // the model itself: its graph outputs are the package's
  std::map<ValueId, int32_t> ids;
  std::map<std::tuple<ValueId, int, int64_t, int>, int32_t> packed;
  const Graph& g() const { return plan.graph; }
};

class Layout {
 public:
  Layout(const ModelPlan& top, const std::vector<ArgLayouts>& task_layouts, const std::vector<std::string>& symbols,
         runtime::PackageContents* out)
      : top_(top), task_layouts_(task_layouts), symbols_(symbols), out_(out) {}

  Status run(std::vector<size_t>* group_calls) {
    Scope s{top_, {}, true, {}, {}};
    group_calls_ = group_calls;
    for (size_t t = 0; t < top_.tasks.size(); ++t) s.tasks.push_back(static_cast<int>(t));
    const Graph& g = s.g();
    for (size_t i = 0; i < g.outputs().size(); ++i) output_index_[g.outputs()[i]] = i;
    for (ValueId v : g.inputs()) {
      const int32_t id = add(s, v, ValueKind::kInput, g.value(v).name);
      out_->inputs.push_back(id);
      io_names_.insert(g.value(v).name);
    }
    TESSERA_RETURN_IF_ERROR(lay_out_groups(s));
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const ValueId v = g.outputs()[i];
      if (graph::shape_size(g.value(v).shape) == 0) {
        // An empty output: no kernel writes it, a value of 0 bytes with its shape.
        out_->outputs.push_back(add(s, v, ValueKind::kOutput, unique_output_name(g.output_name(i))));
        continue;
      }
      auto it = s.ids.find(v);
      if (it == s.ids.end())
        return Status(ErrorCode::kInternal, "output " + g.value(v).name + " is computed by no kernel");
      out_->outputs.push_back(it->second);
    }
    return Status::ok();
  }

 private:
  Status lay_out_groups(Scope& s) {
    for (size_t i = 0; i < s.plan.groups.size(); ++i) {
      if (s.top && group_calls_) group_calls_->push_back(out_->calls.size());
      const graph::Node& anchor = s.g().nodes()[static_cast<size_t>(s.plan.groups[i].nodes.front())];
      if (anchor.kind == OpKind::kIf)
        TESSERA_RETURN_IF_ERROR(lay_out_if(s, i, anchor));
      else if (anchor.kind == OpKind::kLoop)
        TESSERA_RETURN_IF_ERROR(lay_out_loop(s, i, anchor));
      else
        TESSERA_RETURN_IF_ERROR(lay_out_call(s, i));
    }
    return Status::ok();
  }

  // The call of group `i`: a kernel, or an external backend's region.
  Status lay_out_call(Scope& s, size_t i) {
    const graph::FusedGroup& group = s.plan.groups[i];
    const Graph& g = s.g();
    runtime::KernelCall call;
    const int external = i < s.plan.external_of_group.size() ? s.plan.external_of_group[i] : -1;
    const int task = s.plan.task_of_group[i] >= 0 ? s.tasks[static_cast<size_t>(s.plan.task_of_group[i])] : -1;
    static const ArgLayouts kPlain;
    const ArgLayouts& layouts = task >= 0 ? task_layouts_[static_cast<size_t>(task)] : kPlain;
    call.symbol =
        task >= 0 ? symbols_[static_cast<size_t>(task)] : s.plan.externals[static_cast<size_t>(external)].code.symbol;
    for (size_t j = 0; j < group.inputs.size(); ++j) {
      const ValueId v = group.inputs[j];
      if (const PackedLayout* layout = layout_of(layouts, static_cast<int>(j))) {
        if (!g.is_constant(v))
          return Status(ErrorCode::kInternal,
                        "group " + group.name + " packs " + g.value(v).name + ", which is not a constant");
        call.args.push_back(add_packed(s, v, *layout));
      } else {
        TESSERA_ASSIGN_OR_RETURN(int32_t id, read(s, v, group.name));
        call.args.push_back(id);
      }
    }
    // An external region writes every output of its node; a kernel one.
    std::vector<ValueId> results = {group.output};
    if (external >= 0) results = g.nodes()[static_cast<size_t>(group.nodes.front())].outputs;
    for (ValueId result : results) call.args.push_back(result_id(s, result));
    out_->calls.push_back(std::move(call));
    out_->call_info.push_back(call_info(s, group, task, external, results.size()));
    return Status::ok();
  }

  // jump_unless cond -> else; then's calls; copies; jump -> end; else's
  // calls; copies.
  Status lay_out_if(Scope& s, size_t i, const graph::Node& node) {
    const auto& attrs = std::get<graph::ControlAttrs>(node.attrs);
    const ModelPlan::Control& control = s.plan.controls[static_cast<size_t>(s.plan.control_of_group[i])];
    TESSERA_ASSIGN_OR_RETURN(int32_t cond, read(s, node.inputs[0], node.name));
    std::vector<int32_t> captured;
    for (size_t k = 1; k < node.inputs.size(); ++k) {
      TESSERA_ASSIGN_OR_RETURN(int32_t id, read(s, node.inputs[k], node.name));
      captured.push_back(id);
    }
    std::vector<int32_t> outs;
    for (ValueId v : node.outputs) outs.push_back(result_id(s, v));
    if (attrs.bodies.size() != 2 || control.bodies.size() != 2)
      return Status(ErrorCode::kInternal, "if " + node.name + " has no two branches");
    const size_t branch = step(node, CallKind::kJumpUnless, {cond});
    size_t skip_else = 0;
    for (size_t b = 0; b < 2; ++b) {
      if (b == 1) out_->calls[branch].target = static_cast<int32_t>(out_->calls.size());
      TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> results, lay_out_body(s, control, b, captured));
      for (size_t k = 0; k < outs.size(); ++k) step(node, CallKind::kCopy, {results[k], outs[k]});
      if (b == 0) skip_else = step(node, CallKind::kJump, {});
    }
    out_->calls[skip_else].target = static_cast<int32_t>(out_->calls.size());
    return Status::ok();
  }

  // The counter, the go flag and the carried values set by copies; a test
  // jumping past the loop; the body; its scan elements into their slots;
  // the next go, counter and carried values; a jump back to the test; the
  // carried values out.
  Status lay_out_loop(Scope& s, size_t i, const graph::Node& node) {
    const auto& attrs = std::get<graph::ControlAttrs>(node.attrs);
    const ModelPlan::Control& control = s.plan.controls[static_cast<size_t>(s.plan.control_of_group[i])];
    const auto carried = static_cast<size_t>(attrs.num_carried);
    if (control.bodies.size() != 1 || node.inputs.size() < 1 + carried || node.outputs.size() < carried)
      return Status(ErrorCode::kInternal, "loop " + node.name + " does not have the shape of a loop");
    std::vector<int32_t> reads;
    for (ValueId v : node.inputs) {
      TESSERA_ASSIGN_OR_RETURN(int32_t id, read(s, v, node.name));
      reads.push_back(id);
    }
    std::vector<int32_t> outs;
    for (ValueId v : node.outputs) outs.push_back(result_id(s, v));
    const int32_t counter = add_value(node.name + ".i", ValueKind::kIntermediate, DType::i64(), {});
    const int32_t zero = add_value(node.name + ".zero", ValueKind::kConstant, DType::i64(), {}, std::string(8, '\0'));
    const int32_t go = add_value(node.name + ".go", ValueKind::kIntermediate, DType::boolean(), {});
    std::vector<int32_t> slots = {counter};
    step(node, CallKind::kCopy, {zero, counter});
    step(node, CallKind::kCopy, {reads[0], go});
    for (size_t k = 0; k < carried; ++k) {
      const graph::Value& v = s.g().value(node.inputs[1 + k]);
      slots.push_back(
          add_value(node.name + ".carried" + std::to_string(k), ValueKind::kIntermediate, v.dtype, v.shape));
      step(node, CallKind::kCopy, {reads[1 + k], slots.back()});
    }
    const size_t test = step(node, CallKind::kJumpUnless, {go});
    std::vector<int32_t> inputs = slots;
    inputs.insert(inputs.end(), reads.begin() + 1 + static_cast<std::ptrdiff_t>(carried), reads.end());
    TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> results, lay_out_body(s, control, 0, inputs));
    if (results.size() != 2 + carried + (outs.size() - carried))
      return Status(ErrorCode::kInternal,
                    "loop " + node.name + "'s body gives " + std::to_string(results.size()) + " outputs");
    for (size_t j = carried; j < outs.size(); ++j) step(node, CallKind::kCopySlice, {results[2 + j], outs[j], counter});
    step(node, CallKind::kCopy, {results[0], go});
    for (size_t k = 0; k < slots.size(); ++k) step(node, CallKind::kCopy, {results[1 + k], slots[k]});
    step(node, CallKind::kJump, {}, static_cast<int32_t>(test));
    out_->calls[test].target = static_cast<int32_t>(out_->calls.size());
    for (size_t k = 0; k < carried; ++k) step(node, CallKind::kCopy, {slots[1 + k], outs[k]});
    return Status::ok();
  }

  // Body `b` of `control` laid out with its graph inputs bound to `inputs`;
  // the package ids of its outputs.
  Result<std::vector<int32_t>> lay_out_body(const Scope& outer, const ModelPlan::Control& control, size_t b,
                                            const std::vector<int32_t>& inputs) {
    const ModelPlan& body = *control.bodies[b];
    Scope s{body, {}, false, {}, {}};
    for (int t : control.body_tasks[b]) s.tasks.push_back(outer.tasks[static_cast<size_t>(t)]);
    const Graph& g = s.g();
    if (g.inputs().size() != inputs.size())
      return Status(ErrorCode::kInternal, "a body takes " + std::to_string(g.inputs().size()) + " inputs, given " +
                                              std::to_string(inputs.size()));
    for (size_t k = 0; k < inputs.size(); ++k) s.ids[g.inputs()[k]] = inputs[k];
    TESSERA_RETURN_IF_ERROR(lay_out_groups(s));
    std::vector<int32_t> results;
    for (ValueId v : g.outputs()) {
      TESSERA_ASSIGN_OR_RETURN(int32_t id, read(s, v, "a body's output"));
      results.push_back(id);
    }
    return results;
  }

  // A control step of `node`; its index among the calls.
  size_t step(const graph::Node& node, CallKind kind, std::vector<int32_t> args, int32_t target = 0) {
    runtime::KernelCall call;
    call.kind = kind;
    call.args = std::move(args);
    call.target = target;
    out_->calls.push_back(std::move(call));
    runtime::CallInfo info;
    info.name = node.name + "." + runtime::call_kind_name(kind);
    info.nodes = {node.name};
    info.num_outputs = kind == CallKind::kCopy ? 1 : 0;
    out_->call_info.push_back(std::move(info));
    return out_->calls.size() - 1;
  }

  static const PackedLayout* layout_of(const ArgLayouts& layouts, int arg) {
    for (const auto& [a, layout] : layouts)
      if (a == arg) return &layout;
    return nullptr;
  }

  // What the call of `group` computes, for profiles and traces: the model's
  // node names (an external region's original nodes), its task's key and flops.
  runtime::CallInfo call_info(const Scope& s, const graph::FusedGroup& group, int task, int external,
                              size_t outputs) const {
    runtime::CallInfo info;
    info.name = group.name;
    info.num_outputs = static_cast<uint32_t>(outputs);
    for (int n : group.nodes) {
      const graph::Node& node = s.g().nodes()[static_cast<size_t>(n)];
      const auto* region = std::get_if<graph::ExternalAttrs>(&node.attrs);
      if (!region || !region->body)
        info.nodes.push_back(node.name);
      else
        for (const graph::Node& inner : region->body->nodes()) info.nodes.push_back(inner.name);
    }
    if (external >= 0) info.name = s.plan.externals[static_cast<size_t>(external)].name;
    if (task >= 0) {
      info.workload_key = top_.tasks[static_cast<size_t>(task)].dag->workload_key();
      info.flops = top_.tasks[static_cast<size_t>(task)].flops;
    }
    return info;
  }

  // The package id of `v` read in scope `s`: computed before, bound, or a
  // constant added now.
  Result<int32_t> read(Scope& s, ValueId v, const std::string& reader) {
    if (auto it = s.ids.find(v); it != s.ids.end()) return it->second;
    if (s.g().is_constant(v)) return add(s, v, ValueKind::kConstant, s.g().value(v).name);
    return Status(ErrorCode::kInternal, reader + " reads %" + std::to_string(v) + " before any group computes it");
  }

  // The package id of a value a call writes: a package output where it is
  // the model's, else an intermediate.
  int32_t result_id(Scope& s, ValueId result) {
    if (s.top) {
      if (auto out = output_index_.find(result); out != output_index_.end())
        return add(s, result, ValueKind::kOutput, unique_output_name(s.g().output_name(out->second)));
    }
    return add(s, result, ValueKind::kIntermediate, s.g().value(result).name);
  }

  // Names of inputs and outputs are how callers find them: kept unique.
  std::string unique_output_name(const std::string& base) {
    std::string name = base;
    for (int k = 2; io_names_.count(name); ++k) name = base + "." + std::to_string(k);
    io_names_.insert(name);
    return name;
  }

  // Constant `v` stored in `layout`, once per (value, layout) of a scope.
  int32_t add_packed(Scope& s, ValueId v, const PackedLayout& layout) {
    const auto key = std::make_tuple(v, layout.axis, layout.factor, layout.inner);
    if (auto it = s.packed.find(key); it != s.packed.end()) return it->second;
    const graph::Value& value = s.g().value(v);
    std::string data(
        static_cast<size_t>(graph::shape_size(packed_shape(value.shape, layout)) * value.dtype.storage_bytes()),
        '\0');  // more than the value's when the last block is padded
    pack_elements(s.g().constant(v).bytes.data(), data.data(), value.shape, value.dtype.storage_bytes(), layout);
    const int32_t id =
        add_value(value.name + ".packed" + std::to_string(layout.axis) + "x" + std::to_string(layout.factor) +
                      (layout.inner ? "i" + std::to_string(layout.inner) : ""),
                  ValueKind::kConstant, value.dtype, packed_shape(value.shape, layout), std::move(data));
    s.packed[key] = id;
    return id;
  }

  int32_t add(Scope& s, ValueId v, ValueKind kind, const std::string& name) {
    const graph::Value& value = s.g().value(v);
    std::string data;
    if (kind == ValueKind::kConstant) {
      const std::vector<uint8_t>& bytes = s.g().constant(v).bytes;
      data.assign(bytes.begin(), bytes.end());
    }
    const int32_t id = add_value(name, kind, value.dtype, value.shape, std::move(data));
    s.ids[v] = id;
    return id;
  }

  int32_t add_value(std::string name, ValueKind kind, DType dtype, std::vector<int64_t> shape, std::string data = "") {
    runtime::PackageValue pv;
    pv.name = std::move(name);
    pv.kind = kind;
    pv.dtype = dtype;
    pv.shape = std::move(shape);
    pv.data = std::move(data);
    out_->values.push_back(std::move(pv));
    return static_cast<int32_t>(out_->values.size()) - 1;
  }

  const ModelPlan& top_;
  const std::vector<ArgLayouts>& task_layouts_;
  const std::vector<std::string>& symbols_;
  runtime::PackageContents* out_;
  std::map<ValueId, size_t> output_index_;
  std::set<std::string> io_names_;
  std::vector<size_t>* group_calls_ = nullptr;
};

}  // namespace

Status lay_out_package(const ModelPlan& plan, const std::vector<ArgLayouts>& task_layouts,
                       const std::vector<std::string>& symbols, runtime::PackageContents* out,
                       std::vector<size_t>* group_calls) {
  return Layout(plan, task_layouts, symbols, out).run(group_calls);
}

}  // namespace tessera::model
