#include "compiler/external/offload.h"

#include <cctype>
#include <map>

#include "compiler/graph/partition_graph.h"

namespace tessera::external {

std::string region_symbol(int index, const std::string& name) {
  std::string s = "tsr_x" + std::to_string(index) + "_";
  for (char c : name) s.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return s.substr(0, 64);
}

Result<OffloadResult> offload_regions(const graph::Graph& g, const Backend& backend) {
  TESSERA_ASSIGN_OR_RETURN(graph::Graph partitioned, graph::partition_graph(g, backend.partition_rules()));
  OffloadResult result;
  std::map<std::string, std::string> failed;  // region name -> why
  for (const graph::Node& n : partitioned.nodes()) {
    if (n.kind != graph::OpKind::kExternal) continue;
    const auto& attrs = std::get<graph::ExternalAttrs>(n.attrs);
    if (attrs.backend != backend.name()) continue;
    auto code = backend.generate(*attrs.body, region_symbol(static_cast<int>(result.regions.size()), n.name));
    if (!code.is_ok()) {
      failed[n.name] = code.status().message();
      result.warnings.push_back(n.name + " runs on Tessera's kernels: " + backend.name() + " cannot generate it (" +
                                code.status().message() + ")");
      continue;
    }
    result.regions.push_back(OffloadedRegion{n.name, backend.name(), backend.kind(), std::move(code).value(),
                                             backend.link_libraries(), backend.runtime_library(),
                                             static_cast<int>(attrs.body->nodes().size())});
  }
  if (failed.empty()) {
    result.graph = std::move(partitioned);
    return result;
  }
  // Symbols were numbered in generation order, so only failed regions go back.
  TESSERA_ASSIGN_OR_RETURN(result.graph, graph::inline_external_nodes(partitioned, [&](const graph::Node& n) {
                             return failed.count(n.name) > 0;
                           }));
  return result;
}

}  // namespace tessera::external
