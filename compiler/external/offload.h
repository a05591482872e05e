// Offloading regions to a backend: partition, generate each region, and put
// back (with a warning) what the backend cannot generate.
#pragma once

#include <string>
#include <vector>

#include "compiler/external/backend.h"
#include "compiler/graph/graph.h"

namespace tessera::external {

/// One region a backend generated.
struct OffloadedRegion {
  std::string name;     ///< the external node's name ("cblas_region0")
  std::string backend;  ///< Backend::name()
  BackendKind kind = BackendKind::kCSource;
  ExternalCode code;
  std::vector<std::string> link_libraries;  ///< Backend::link_libraries()
  std::string runtime_library;              ///< Backend::runtime_library()
  int num_nodes = 0;                        ///< operators inside
};

/// A graph whose external nodes all have code.
struct OffloadResult {
  graph::Graph graph;                    ///< with one kExternal node per entry of `regions`
  std::vector<OffloadedRegion> regions;  ///< in node order
  std::vector<std::string> warnings;     ///< "cblas_region1 runs on Tessera's kernels: <reason>"
};

/// The entry point of region `name` numbered `index`: "tsr_x<index>_<name>".
std::string region_symbol(int index, const std::string& name);

/// Partitions `g` for `backend` and generates every region. A region the
/// backend cannot generate (a shape or dtype it cannot take) is inlined back
/// and runs on Tessera's kernels, with a warning naming the region and the
/// reason; that is never an error. Errors: the partitioner's.
Result<OffloadResult> offload_regions(const graph::Graph& g, const Backend& backend);

}  // namespace tessera::external
