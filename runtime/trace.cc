#include "runtime/trace.h"

#include <errno.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace tessera::runtime {
namespace {

// A call's name lists this many nodes at most: an external region may hold
// a whole model (the trace's args list them all).
constexpr size_t kMaxNamedNodes = 6;

// A JSON string literal; control characters escaped, other bytes as they are
// (node names are UTF-8, as ONNX's protobuf strings are).
void append_json_string(std::string* out, const std::string& s) {
  out->push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

// Nanoseconds as microseconds with three decimals, exactly (no rounding, so
// that one call's end never passes the next call's start).
std::string microseconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

void append_metadata_event(std::string* out, const char* name, const std::string& value, const TraceProcess& who) {
  *out += "{\"name\":\"";
  *out += name;
  *out += "\",\"ph\":\"M\",\"ts\":0,\"pid\":" + std::to_string(who.pid) + ",\"tid\":" + std::to_string(who.tid) +
          ",\"args\":{\"name\":";
  append_json_string(out, value);
  *out += "}}";
}

void append_call_args(std::string* out, const CallDescription& call, size_t index, int64_t duration_ns) {
  *out += "\"args\":{\"call\":" + std::to_string(index) + ",\"symbol\":";
  append_json_string(out, call.symbol);
  if (!call.info) {
    *out += "}";
    return;
  }
  *out += ",\"group\":";
  append_json_string(out, call.info->name);
  *out += ",\"nodes\":[";
  for (size_t k = 0; k < call.info->nodes.size(); ++k) {
    if (k) out->push_back(',');
    append_json_string(out, call.info->nodes[k]);
  }
  *out += "],\"output_shapes\":[";
  for (size_t k = 0; k < call.output_shapes.size(); ++k) {
    *out += k ? ",[" : "[";
    for (size_t d = 0; d < call.output_shapes[k].size(); ++d)
      *out += (d ? "," : "") + std::to_string(call.output_shapes[k][d]);
    *out += "]";
  }
  *out += "],\"workload_key\":";
  append_json_string(out, call.info->workload_key);
  char buf[96];
  const double flops = std::isfinite(call.info->flops) ? call.info->flops : 0.0;  // JSON has no inf
  const double gflops = duration_ns > 0 ? flops / static_cast<double>(duration_ns) : 0.0;
  std::snprintf(buf, sizeof buf, ",\"flops\":%.0f,\"gflops_per_s\":%.3f}", flops, gflops);
  *out += buf;
}

}  // namespace

std::string call_display_name(const CallDescription& call) {
  if (!call.info || call.info->nodes.empty())
    return call.info && !call.info->name.empty() ? call.info->name : call.symbol;
  const std::vector<std::string>& nodes = call.info->nodes;
  std::string out = nodes[0];
  for (size_t k = 1; k < nodes.size(); ++k) {
    if (k == kMaxNamedNodes && nodes.size() > kMaxNamedNodes + 1) {
      out += " + " + std::to_string(nodes.size() - k) + " more";
      break;
    }
    // The shared prefix up to its last '/': "/layer1/0/" of "/layer1/0/conv1/Conv" and "/layer1/0/relu/Relu".
    size_t common = 0;
    while (common < nodes[0].size() && common < nodes[k].size() && nodes[0][common] == nodes[k][common]) ++common;
    const size_t slash = nodes[k].rfind('/', common == 0 ? 0 : common - 1);
    const size_t cut = common == 0 || slash == std::string::npos ? 0 : slash + 1;
    out += " + " + nodes[k].substr(cut);
  }
  return out;
}

std::string shapes_text(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out;
  for (const std::vector<int64_t>& shape : shapes) {
    if (!out.empty()) out += " ";
    if (shape.empty()) out += "scalar";
    for (size_t d = 0; d < shape.size(); ++d) out += (d ? "x" : "") + std::to_string(shape[d]);
  }
  return out;
}

std::string chrome_trace_json(const std::vector<CallDescription>& calls, const std::vector<CallSpan>& spans,
                              const TraceProcess& who) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  append_metadata_event(&out, "process_name", who.process_name, who);
  out += ",\n";
  append_metadata_event(&out, "thread_name", who.thread_name, who);
  // The pool's worker threads, named by participant.
  std::map<int64_t, int> workers;
  for (const CallSpan& span : spans)
    for (const ShareSpan& share : span.shares)
      if (share.participant != 0) workers.emplace(share.thread_id, share.participant);
  for (const auto& [tid, participant] : workers) {
    TraceProcess worker = who;
    worker.tid = tid;
    out += ",\n";
    append_metadata_event(&out, "thread_name", "pool worker " + std::to_string(participant), worker);
  }
  for (const CallSpan& span : spans) {
    if (span.call >= calls.size()) continue;  // not a call of these descriptions
    const CallDescription& call = calls[span.call];
    const std::string name = call_display_name(call);
    out += ",\n{\"name\":";
    append_json_string(&out, name);
    out += ",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":" + microseconds(span.start_ns) +
           ",\"dur\":" + microseconds(span.duration_ns) + ",\"pid\":" + std::to_string(who.pid) +
           ",\"tid\":" + std::to_string(who.tid) + ",";
    append_call_args(&out, call, span.call, span.duration_ns);
    out += "}";
    // Each thread's share of the call's parallel loops: on the executor's
    // thread nested inside the call's event, on a worker on its own row.
    for (const ShareSpan& share : span.shares) {
      out += ",\n{\"name\":";
      append_json_string(&out, name);
      out += ",\"cat\":\"pool\",\"ph\":\"X\",\"ts\":" + microseconds(share.start_ns) +
             ",\"dur\":" + microseconds(share.duration_ns) + ",\"pid\":" + std::to_string(who.pid) +
             ",\"tid\":" + std::to_string(share.participant == 0 ? who.tid : share.thread_id) +
             ",\"args\":{\"call\":" + std::to_string(span.call) +
             ",\"participant\":" + std::to_string(share.participant) + "}}";
    }
  }
  out += "\n]}\n";
  return out;
}

Status write_chrome_trace(const std::string& path, const std::vector<CallDescription>& calls,
                          const std::vector<CallSpan>& spans, const TraceProcess& who) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return Status(ErrorCode::kIOError, "cannot write the trace " + path + ": " + std::strerror(errno));
  const std::string json = chrome_trace_json(calls, spans, who);
  file.write(json.data(), static_cast<std::streamsize>(json.size()));
  file.flush();
  if (!file) return Status(ErrorCode::kIOError, "cannot write the trace " + path);
  return Status::ok();
}

}  // namespace tessera::runtime
