#include "bench/ort_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

#ifndef TESSERA_SOURCE_DIR
#error "TESSERA_SOURCE_DIR must name the repository root (bench/CMakeLists.txt sets it)"
#endif
// The node that CMake found at configure time; empty: look it up on PATH.
#ifndef TESSERA_NODE_EXECUTABLE
#define TESSERA_NODE_EXECUTABLE ""
#endif

namespace tessera::bench {
namespace {

// Debian's interpreter: the python3 first on PATH may not see python3-onnx.
constexpr const char* kDebianPython = "/usr/bin/python3";

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string node_program() {
  const std::string configured = TESSERA_NODE_EXECUTABLE;
  return !configured.empty() && is_file(configured) ? configured : "node";
}

std::string ort_dir() {
  return source_dir() + "/.cache/onnxruntime";
}
std::string ort_script() {
  return source_dir() + "/scripts/ort_run.js";
}

struct ProcessResult {
  int exit_code = 0;
  std::string out, err;
};

// Runs argv[0] (looked up on PATH if it has no '/') with stdin from /dev/null,
// collecting stdout and stderr. No shell: arguments pass through untouched.
Result<ProcessResult> run_process(const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status(ErrorCode::kIOError, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status(ErrorCode::kIOError, std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return Status(rc == ENOENT ? ErrorCode::kUnavailable : ErrorCode::kIOError,
                  "cannot start " + args[0] + ": " + std::strerror(rc));
  }

  // Drain both pipes together: a child blocked on a full stderr pipe would
  // otherwise never close stdout.
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status(ErrorCode::kIOError, std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    return Status(ErrorCode::kRuntimeError, args[0] + " killed by signal " + std::to_string(WTERMSIG(status)) +
                                                (result.err.empty() ? "" : ": " + result.err));
  }
  result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The command line of ort_run.js shared by both entry points.
Result<std::vector<std::string>> ort_command(const std::string& model_path, const NpyInputs& inputs,
                                             const InputShapes& input_shapes, int threads) {
  if (threads < 1)
    return Status(ErrorCode::kInvalidArgument, "ORT threads must be at least 1, got " + std::to_string(threads));
  if (!is_file(model_path)) return Status(ErrorCode::kNotFound, "model " + model_path + " does not exist");
  std::string why;
  if (!ort_available(&why)) return Status(ErrorCode::kUnavailable, why);
  std::vector<std::string> cmd = {
      node_program(),          ort_script(),      model_path, "--ort", ort_dir(), "--threads",
      std::to_string(threads), "--random-inputs", "0"};
  for (const auto& [name, file] : inputs) {
    cmd.push_back("--input");
    cmd.push_back(name + "=" + file);
  }
  for (const auto& [name, dims] : input_shapes) {
    std::string spec = name + ":";
    for (size_t i = 0; i < dims.size(); ++i) spec += (i ? "," : "") + std::to_string(dims[i]);
    cmd.push_back("--input-shape");
    cmd.push_back(spec);
  }
  return cmd;
}

Result<std::string> run_ort(const std::vector<std::string>& cmd, const std::string& model_path) {
  TESSERA_ASSIGN_OR_RETURN(ProcessResult r, run_process(cmd));
  if (r.exit_code != 0) {
    return Status(ErrorCode::kRuntimeError,
                  "ONNX Runtime on " + model_path + ": " +
                      (r.err.empty() ? "exit code " + std::to_string(r.exit_code) : trimmed(r.err)));
  }
  return std::move(r.out);
}

}  // namespace

std::string source_dir() {
  return TESSERA_SOURCE_DIR;
}

std::string ocr_models_dir() {
  return source_dir() + "/.cache/ocr-models/package/assets";
}

bool ort_available(std::string* why) {
  auto say = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (!is_file(ort_script())) return say("the script " + ort_script() + " is missing");
  if (!is_file(ort_dir() + "/node_modules/onnxruntime-node/package.json")) {
    return say("onnxruntime-node is not installed in " + ort_dir() + ": run scripts/install-deps.sh");
  }
  Result<ProcessResult> node = run_process({node_program(), "--version"});
  if (!node.is_ok())
    return say("node not found (" + node.status().message() + "): install nodejs (scripts/install-deps.sh)");
  if (node->exit_code != 0) return say(node_program() + " --version failed: " + trimmed(node->err));
  return true;
}

namespace {

// The value of ort_run.js's `median_ms=<float>` line in `out`.
Result<double> median_ms_of(const std::string& out, const std::string& model_path) {
  const std::string key = "median_ms=";
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(pos, end - pos);
    if (line.rfind(key, 0) == 0) {
      const std::string number = line.substr(key.size());
      char* stop = nullptr;
      const double ms = std::strtod(number.c_str(), &stop);
      if (stop != number.c_str() && *stop == '\0' && ms >= 0) return ms;
      break;
    }
    pos = end + 1;
  }
  return Status(ErrorCode::kRuntimeError,
                "ort_run.js printed no median_ms=<float> line for " + model_path + ": '" + trimmed(out) + "'");
}

}  // namespace

Result<double> ort_median_ms(const std::string& model_path, const NpyInputs& inputs, const InputShapes& input_shapes,
                             int threads, int runs, int warmup) {
  if (runs < 1 || warmup < 0) {
    return Status(ErrorCode::kInvalidArgument, "ORT benchmark needs runs >= 1 and warmup >= 0, got runs=" +
                                                   std::to_string(runs) + " warmup=" + std::to_string(warmup));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> cmd, ort_command(model_path, inputs, input_shapes, threads));
  cmd.insert(cmd.end(), {"--bench", std::to_string(runs), "--warmup", std::to_string(warmup)});
  TESSERA_ASSIGN_OR_RETURN(std::string out, run_ort(cmd, model_path));
  return median_ms_of(out, model_path);
}

Result<double> ort_stream_median_ms(const std::string& model_path, const NpyInputs& inputs,
                                    const std::vector<std::string>& per_call,
                                    const std::map<std::string, std::string>& carry, int calls, int threads,
                                    const std::string& output_dir) {
  if (calls < 1) return Status(ErrorCode::kInvalidArgument, "a stream needs calls >= 1, got " + std::to_string(calls));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> cmd, ort_command(model_path, inputs, {}, threads));
  cmd.insert(cmd.end(), {"--stream", std::to_string(calls), "--output-dir", output_dir});
  for (const std::string& name : per_call) cmd.insert(cmd.end(), {"--per-call", name});
  for (const auto& [out, in] : carry) cmd.insert(cmd.end(), {"--carry", out + "=" + in});
  TESSERA_ASSIGN_OR_RETURN(std::string out, run_ort(cmd, model_path));
  return median_ms_of(out, model_path);
}

Status ort_run_outputs(const std::string& model_path, const NpyInputs& inputs, const std::string& output_dir,
                       int threads, const InputShapes& input_shapes) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> cmd, ort_command(model_path, inputs, input_shapes, threads));
  cmd.insert(cmd.end(), {"--output-dir", output_dir});
  TESSERA_ASSIGN_OR_RETURN(std::string out, run_ort(cmd, model_path));
  (void)out;
  return Status::ok();
}

Status write_generated_model(const std::string& script, const std::string& path, int seed,
                             const std::vector<std::string>& options) {
  if (!is_file(kDebianPython)) return Status(ErrorCode::kUnavailable, std::string(kDebianPython) + " is missing");
  std::vector<std::string> argv = {
      kDebianPython, source_dir() + "/scripts/models/" + script, "-o", path, "--seed", std::to_string(seed)};
  argv.insert(argv.end(), options.begin(), options.end());
  TESSERA_ASSIGN_OR_RETURN(ProcessResult r, run_process(argv));
  if (r.exit_code == 0) return Status::ok();
  const bool no_onnx = r.err.find("No module named") != std::string::npos;
  return Status(no_onnx ? ErrorCode::kUnavailable : ErrorCode::kRuntimeError,
                script + ": " + trimmed(r.err) + (no_onnx ? " (install python3-onnx python3-numpy)" : ""));
}

Status write_resnet18(const std::string& path, int seed, int batch) {
  return write_generated_model("resnet18.py", path, seed, {"--batch", std::to_string(batch)});
}

Status write_transformer(const std::string& path, int seed, const std::vector<std::string>& options) {
  return write_generated_model("transformer.py", path, seed, options);
}

}  // namespace tessera::bench
