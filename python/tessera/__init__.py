"""Tessera from Python: tune a model or an operator, compile a model into a
package, and run the package on numpy arrays.

    import tessera
    tessera.tune("model.onnx", trials=200, db="tessera.db")    # as `tessera tune`
    tessera.compile("model.onnx", output="model.tsr", db="tessera.db")
    m = tessera.Module("model.tsr")
    outputs = m.run(x=x)                                       # {name: numpy array}

Errors from Tessera raise tessera.Error (a RuntimeError) with Tessera's message;
wrong arguments raise ValueError or TypeError. docs/python.md has the details.
"""
import os
import re

# oneDNN's regions (an external backend) run on OpenMP's threads, which read
# their wait policy once, when OpenMP loads: with this package's library
# (XGBoost links it). Packages run them passive unless the environment says
# otherwise, as tessera-run and the C API do (docs/byoc.md).
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from ._tessera import Error, Module, TensorInfo, empty
from . import _tessera

__version__ = _tessera.__version__

__all__ = ["Error", "Module", "TensorInfo", "empty", "compile", "tune", "__version__"]

# tessera.tune's keyword arguments, each `tessera tune`'s option of the same
# name with "_" for "-" (check=False is --no-check).
_TUNE_OPTIONS = {
    "target", "trials", "space", "strategy", "db", "tracker", "key", "keyfile", "tracker_key", "insecure",
    "workers", "threads", "batch", "seed", "time_budget", "early_stopping", "scheduler", "cache", "repeat",
    "min_repeat_ms", "timeout", "worker_wait", "byoc", "precision", "prior_db",
}


def _in_python_terms(error):
    """tessera.Error `error`, its message naming this module's keywords where
    the command line's options would be (`input_shapes=` for --input-shape)."""
    text = re.sub(r"--input-shape ([^\s:]+(?::[^\s:]+)*):d0,d1,\.\.\.", r"input_shapes={'\1': [d0, d1, ...]}",
                  str(error))
    text = text.replace("--input-shape", "input_shapes").replace("--input-value", "values")
    translated = Error(text)
    translated.code = getattr(error, "code", None)
    return translated


def _shape_specs(input_shapes):
    """{"x": (1, 3, 224, 224)} as --input-shape values: ["x:1,3,224,224"]."""
    if not input_shapes:
        return []
    if not isinstance(input_shapes, dict):
        raise TypeError("input_shapes must be a dict of input name to shape, got %s" % type(input_shapes).__name__)
    return ["%s:%s" % (name, ",".join(str(int(d)) for d in shape)) for name, shape in input_shapes.items()]


def _value_specs(values):
    """{"sr": 16000} as --input-value values: ["sr=16000"]."""
    if not values:
        return []
    if not isinstance(values, dict):
        raise TypeError("values must be a dict of input name to number, got %s" % type(values).__name__)
    specs = []
    for name, value in values.items():
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, float)):
            raise TypeError("values[%r] must be a number, got %s" % (name, type(value).__name__))
        specs.append("%s=%r" % (name, value))
    return specs


def compile(model, output=None, input_shapes=None, db="tessera.db", target=None, use_records=True,
            byoc="auto", jobs=0, verbose=False, values=None, precision="fp32"):
    """Compiles the ONNX model `model` into a package, as `tessera compile` does,
    and returns the package's path.

    output: the package to write (default: the model's name with .tsr, in the
    current folder). input_shapes: {input name: shape} for dynamic inputs.
    values: {input name: number} binds scalar inputs (a sample rate) to
    constants: what depends on them folds (an If on them becomes its branch)
    and the package no longer takes them. db: the records database, read only; kernels without records (or all, with
    use_records=False, or when the file is missing) use their fallback schedule.
    target: a target string such as "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
    (default: this machine). byoc: "auto" (oneDNN where its module is
    installed, each region the faster way as tune timed it, Tessera's where no
    stored time holds: compile times nothing), "none", "cblas" or
    "dnnl" (docs/byoc.md). jobs: code
    generation threads (0: one per CPU). verbose: print the per-kernel summary
    (with precision="bf16" or "fp16", the largest difference from float32 too).
    precision: "fp32", "bf16" (MatMul and Gemm by constant weights in
    bfloat16, accumulated in float32, where the target has a bfloat16 dot
    product) or "fp16" (their weights stored in float16, half the bytes,
    widened to float32 as read).
    Raises ValueError (a target, backend or precision that does not parse or
    fit the target) or tessera.Error.
    """
    model = os.fspath(model)
    if output is None:
        base = os.path.basename(model)
        output = (base[:-5] if base.endswith(".onnx") else base) + ".tsr"
    output = os.fspath(output)
    try:
        _tessera.compile(model, output, _shape_specs(input_shapes), _value_specs(values), os.fspath(db),
                         bool(use_records), target or "", byoc, int(jobs), bool(verbose), str(precision))
    except Error as e:
        raise _in_python_terms(e) from None
    return output


def _option_values(kwargs):
    """tessera.tune's keyword arguments as `tessera tune`'s options: {name: [values]}."""
    values = {}
    for name, value in kwargs.items():
        if name == "check":
            if not value:
                values["no-check"] = [""]
            continue
        if name not in _TUNE_OPTIONS:
            raise TypeError("tune() got an unexpected keyword argument '%s' (accepted: check, input_shapes, "
                            "progress, verbose, %s)" % (name, ", ".join(sorted(_TUNE_OPTIONS))))
        if value is None or value is False:
            continue
        values[name.replace("_", "-")] = [""] if value is True else [os.fspath(value) if name in
                                                                     ("db", "prior_db", "keyfile", "tracker_key") else str(value)]
    return values


def _command_line(model, ops, values):
    """The `tessera tune` command this call is equivalent to, recorded with the session."""
    words = ["tessera", "tune"] + ([model] if model else [])
    for op in ops:
        words += ["--op", op]
    for name, vals in values.items():
        if name != "op":
            words += ["--" + name + ("" if v == "" else " " + v) for v in vals]
    return " ".join(words)  # the tuner records the timing mode when the line does not name it


def tune(model_or_op, trials=64, db="tessera.db", input_shapes=None, progress=True, values=None, verbose=False,
         **options):
    """Tunes a model's kernels or operators, as `tessera tune` does, on local
    workers (or a farm with tracker=..., key=...), every measurement kept in `db`.

    model_or_op: an .onnx path (every distinct kernel of the model), or an
    operator spec such as "matmul:M=1024,N=1024,K=1024" (`tessera space --help`
    lists them), or a list of specs. options: `tessera tune`'s options by name
    with "_" for "-": target, space, strategy, workers, threads, batch, seed,
    time_budget, early_stopping, scheduler, cache, repeat, min_repeat_ms,
    timeout, worker_wait, tracker, key, keyfile, tracker_key, insecure, prior_db
    (another records database whose records of these kernels on other targets
    warm the cost model; never stored in `db`), byoc
    (with a model: the external backend whose regions are timed both ways
    after tuning, for compile's byoc="auto"; default "auto"); and
    check=False for --no-check. values: as tessera.compile's. progress: print as `tessera tune` does (a block
    redrawn at a terminal, a line per batch otherwise, and at the end the 12 largest tasks); False: silent.
    verbose: at the end, every task and every backend region, as `tessera tune --verbose`.

    The GIL is released while tuning. Ctrl-C stops after the current batch with
    every measurement stored (again: stops at once, dropping the batch in
    flight), then raises KeyboardInterrupt. Returns {"stored", "stored_ok",
    "stopped", "tasks": [{"name", "workload_key", "trials", "errors",
    "best_cost_s", "flops"}]}. Raises ValueError (an option's value), TypeError
    (an unknown option), tessera.Error (the job failed, or every trial did).
    """
    model_or_op = os.fspath(model_or_op) if not isinstance(model_or_op, (list, tuple)) else list(model_or_op)
    is_model = isinstance(model_or_op, str) and model_or_op.endswith(".onnx")
    ops = [] if is_model else ([model_or_op] if isinstance(model_or_op, str) else model_or_op)
    option_values = _option_values(dict(options, trials=trials, db=db))
    if is_model:
        option_values["input-shape"] = _shape_specs(input_shapes)
        option_values["input-value"] = _value_specs(values)
    elif input_shapes or values:
        raise ValueError("input_shapes and values go with a model, not an operator")
    option_values["op"] = [str(op) for op in ops]
    model = model_or_op if is_model else ""
    try:
        return _tessera.tune(model, option_values, _command_line(model, ops, option_values), bool(progress),
                             bool(verbose))
    except Error as e:
        raise _in_python_terms(e) from None
