// The interface of an external backend (bring your own codegen).
//
// A backend declares what it takes (partition rules: operators with a
// predicate on attributes, dtypes and shapes, and composite patterns) and
// generates code for each region the partitioner hands it. Two kinds:
//   - kCSource: C source for the region, compiled by a C compiler into an
//     object linked into the package's library like any kernel (cblas);
//   - kGraphPayload: the region serialised for a runtime module of the
//     backend's own that the package loads (dnnl).
// docs/byoc.md walks through adding one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/graph/partition_graph.h"

namespace tessera::external {

/// How a backend's code reaches the device.
enum class BackendKind : uint8_t {
  kCSource,       ///< C source, compiled into the package's library
  kGraphPayload,  ///< a serialised region for the backend's runtime module
};

/// "c-source", "graph-payload".
const char* backend_kind_name(BackendKind kind);

/// What a backend generated for one region.
struct ExternalCode {
  std::string symbol;   ///< the entry point, with the kernel ABI (runtime/c_abi.h): args = region inputs, then outputs
  std::string source;   ///< kCSource: one C translation unit defining `symbol`; kGraphPayload: the payload
  std::string version;  ///< kGraphPayload: the payload format's version, which the runtime module checks
};

/// One external backend. Stateless: generate may run for several regions at once.
class Backend {
 public:
  virtual ~Backend() = default;
  /// The name users type (`--byoc cblas`) and external nodes carry.
  virtual std::string name() const = 0;
  virtual BackendKind kind() const = 0;
  /// What the backend takes, for graph::partition_graph.
  virtual graph::PartitionRules partition_rules() const = 0;
  /// Code for one region: `body` is an external node's body graph, `symbol`
  /// the entry point to define. Errors: kInvalidArgument naming what the
  /// backend cannot take (the region then stays Tessera's).
  virtual Result<ExternalCode> generate(const graph::Graph& body, const std::string& symbol) const = 0;
  /// Libraries (as `-l` names) the package's library links for this
  /// backend's code: {"openblas"}.
  virtual std::vector<std::string> link_libraries() const = 0;
  /// The shared library a device must have to run the backend's code
  /// ("libopenblas.so.0"), recorded in the package.
  virtual std::string runtime_library() const = 0;
};

/// The backends this build knows, by name ("cblas").
std::vector<std::string> backend_names();

/// The backend called `name`; "none" gives null (everything Tessera's).
/// Errors: kInvalidArgument listing the known names.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name);

}  // namespace tessera::external
