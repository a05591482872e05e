// Profiles and traces of a model's run: how a kernel call is named for people
// (the model's node names), and the Chrome trace event format that Perfetto
// (ui.perfetto.dev) and chrome://tracing load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/graph_executor.h"

namespace tessera::runtime {

/// The call's nodes joined by " + ", each after the first without the path
/// prefix it shares with the first ("/layer1/0/conv1/Conv + relu/Relu"),
/// past six nodes "+ N more"; without metadata (an older package) the
/// kernel's symbol.
std::string call_display_name(const CallDescription& call);

/// "1x64x56x56" (a scalar: "scalar"); several shapes joined by " ".
std::string shapes_text(const std::vector<std::vector<int64_t>>& shapes);

/// Who ran a traced run, for the trace's metadata ("M") events.
struct TraceProcess {
  int64_t pid = 0;
  int64_t tid = 0;           ///< the executor's (calling) thread
  std::string process_name;  ///< "tessera run resnet18.tsr"
  std::string thread_name;   ///< "executor (kernels; 4-thread pool)"
};

/// The trace of one run in the Chrome trace event format (JSON object form):
/// "traceEvents" holds process_name and thread_name metadata events (the
/// executor's thread, then each pool worker that ran a share), then per call
/// one complete event ("ph": "X", category "kernel") with ts/dur in
/// microseconds from the run's start, pid/tid of `who`, and args with the
/// call index, symbol, nodes, output shapes, workload key, flops and GFLOP/s
/// (those the package knows), followed by one "X" event (category "pool")
/// per share of its parallel loops, on the thread that ran it. Spans must be
/// in call order (as run_traced() returns them).
std::string chrome_trace_json(const std::vector<CallDescription>& calls, const std::vector<CallSpan>& spans,
                              const TraceProcess& who);

/// Writes chrome_trace_json(...) to `path`. Errors: kIOError naming the path.
Status write_chrome_trace(const std::string& path, const std::vector<CallDescription>& calls,
                          const std::vector<CallSpan>& spans, const TraceProcess& who);

}  // namespace tessera::runtime
