#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU), the peer that
// Tessera's model-level tests and benchmarks compare against.
//
// Inputs come from .npy files or from a seeded generator; outputs are written
// as .npy files; --bench prints the median latency as `median_ms=<float>`.
// ONNX Runtime is the copy scripts/install-deps.sh puts in .cache/onnxruntime
// (or --ort DIR). No npm packages beyond onnxruntime-node.
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE = `usage: node scripts/ort_run.js MODEL.onnx [options]
  --input NAME=FILE.npy      value of input NAME (repeatable)
  --random-inputs SEED       fill every input not given by --input with seeded random values
  --input-shape NAME:D0,D1,...  shape of a random input (needed where the model's is dynamic)
  --threads N                intra-op threads (default 2; inter-op is 1, execution sequential)
  --output-dir DIR           write each output as DIR/<output name>.npy
  --bench N                  time N runs, print median_ms=<float> and runs=<N>
  --warmup W                 untimed runs before --bench (default 1)
  --ort DIR                  onnxruntime-node install (default <repo>/.cache/onnxruntime)
  --stream N                 N calls in a row (a streaming model); outputs are written stacked, [N, ...]
  --per-call NAME            with --stream: input NAME's file holds one value per call, stacked [N, ...]
  --carry OUT=IN             with --stream: output OUT of a call is input IN of the next (a state)`;

/// An error the user can fix: printed without a stack, exit code 1.
class UsageError extends Error {}

function fail(msg) { throw new UsageError(msg); }

function parse_int(text, what, min) {
  if (!/^-?\d+$/.test(text)) fail(`${what}: '${text}' is not an integer`);
  const v = Number(text);
  if (v < min) fail(`${what}: ${v} is less than ${min}`);
  return v;
}

function parse_args(argv) {
  const a = {
    model: null, inputs: new Map(), shapes: new Map(), seed: null, threads: 2,
    output_dir: null, bench: 0, warmup: 1, ort: path.resolve(__dirname, '..', '.cache', 'onnxruntime'),
    stream: 0, per_call: new Set(), carry: new Map(),
  };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${arg} needs a value`);
      return argv[++i];
    };
    switch (arg) {
      case '-h': case '--help': process.stdout.write(USAGE + '\n'); process.exit(0); break;
      case '--input': {
        const spec = value();
        const eq = spec.indexOf('=');
        if (eq <= 0 || eq === spec.length - 1) fail(`--input '${spec}': expected NAME=FILE.npy`);
        const name = spec.slice(0, eq);
        if (a.inputs.has(name)) fail(`--input '${name}' given twice`);
        a.inputs.set(name, spec.slice(eq + 1));
        break;
      }
      case '--input-shape': {
        const spec = value();
        const colon = spec.lastIndexOf(':');
        if (colon <= 0) fail(`--input-shape '${spec}': expected NAME:D0,D1,...`);
        const dims_text = spec.slice(colon + 1);
        const dims = dims_text === '' ? [] : dims_text.split(',').map(
          (d) => parse_int(d.trim(), `--input-shape '${spec}'`, 0));
        a.shapes.set(spec.slice(0, colon), dims);
        break;
      }
      case '--random-inputs': a.seed = parse_int(value(), '--random-inputs', 0); break;
      case '--threads': a.threads = parse_int(value(), '--threads', 1); break;
      case '--output-dir': a.output_dir = value(); break;
      case '--bench': a.bench = parse_int(value(), '--bench', 1); break;
      case '--warmup': a.warmup = parse_int(value(), '--warmup', 0); break;
      case '--ort': a.ort = path.resolve(value()); break;
      case '--stream': a.stream = parse_int(value(), '--stream', 1); break;
      case '--per-call': a.per_call.add(value()); break;
      case '--carry': {
        const spec = value();
        const eq = spec.indexOf('=');
        if (eq <= 0 || eq === spec.length - 1) fail(`--carry '${spec}': expected OUTPUT=INPUT`);
        a.carry.set(spec.slice(0, eq), spec.slice(eq + 1));
        break;
      }
      default:
        if (arg.startsWith('-')) fail(`unknown option ${arg}\n${USAGE}`);
        if (a.model !== null) fail(`two models given: ${a.model} and ${arg}`);
        a.model = arg;
    }
  }
  if (a.model === null) fail(`no model given\n${USAGE}`);
  if (a.stream === 0 && (a.per_call.size > 0 || a.carry.size > 0)) fail('--per-call and --carry go with --stream N');
  return a;
}

// ---- .npy (format 1.0 written; 1.0, 2.0 and 3.0 read; little-endian, C order) ----

// numpy descr <-> ONNX Runtime tensor type and the typed array holding it.
const NPY_TYPES = [
  { descr: '<f4', type: 'float32', array: Float32Array },
  { descr: '<f8', type: 'float64', array: Float64Array },
  { descr: '<f2', type: 'float16', array: Uint16Array },
  { descr: '|i1', type: 'int8', array: Int8Array },
  { descr: '|u1', type: 'uint8', array: Uint8Array },
  { descr: '<i2', type: 'int16', array: Int16Array },
  { descr: '<u2', type: 'uint16', array: Uint16Array },
  { descr: '<i4', type: 'int32', array: Int32Array },
  { descr: '<u4', type: 'uint32', array: Uint32Array },
  { descr: '<i8', type: 'int64', array: BigInt64Array },
  { descr: '<u8', type: 'uint64', array: BigUint64Array },
  { descr: '|b1', type: 'bool', array: Uint8Array },
];

function npy_type_by_descr(descr) {
  // numpy writes single-byte types with '|' but accepts '<' and '=' too.
  const norm = /^[<=|][iub]1$/.test(descr) ? '|' + descr.slice(1) : descr.replace(/^=/, '<');
  return NPY_TYPES.find((t) => t.descr === norm);
}

function read_npy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    fail(`cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
  }
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    fail(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf.readUInt8(6);
  let header_len, start;
  if (major === 1) { header_len = buf.readUInt16LE(8); start = 10; }
  else if (major === 2 || major === 3) {
    if (buf.length < 12) fail(`${file}: truncated header`);
    header_len = buf.readUInt32LE(8); start = 12;
  } else fail(`${file}: unsupported .npy version ${major}`);
  if (start + header_len > buf.length) fail(`${file}: truncated header`);
  const header = buf.toString('latin1', start, start + header_len);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(`${file}: malformed header ${JSON.stringify(header.trim())}`);
  if (fortran[1] === 'True') fail(`${file}: Fortran order is not supported`);
  const t = npy_type_by_descr(descr[1]);
  if (!t) fail(`${file}: unsupported dtype '${descr[1]}' (little-endian numbers and bool only)`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) fail(`${file}: bad shape (${shape[1]})`);
  const count = dims.reduce((p, d) => p * d, 1);
  const data_start = start + header_len;
  const bytes = count * t.array.BYTES_PER_ELEMENT;
  if (buf.length - data_start < bytes) {
    fail(`${file}: ${buf.length - data_start} data bytes, shape (${dims}) of ${descr[1]} needs ${bytes}`);
  }
  // Copy into a fresh, aligned buffer: the file's data offset need not be.
  const data = new t.array(count);
  Buffer.from(data.buffer).set(buf.subarray(data_start, data_start + bytes));
  return { type: t.type, dims, data };
}

function write_npy(file, type, dims, data) {
  const t = NPY_TYPES.find((x) => x.type === type);
  if (!t) fail(`cannot write output of type ${type} as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${t.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad with spaces so that the data starts at a multiple of 64, as numpy does.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const head = Buffer.alloc(10);
  head.writeUInt8(0x93, 0);
  head.write('NUMPY', 1, 'latin1');
  head.writeUInt8(1, 6);
  head.writeUInt8(0, 7);
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

// ---- ONNX Runtime ----

// ONNX Runtime's native library leaves a log file of its telemetry SDK
// (mat-debug-PID.log) in $TMPDIR at every start: it gets a folder of its
// own, removed when this process exits.
function private_tmpdir() {
  const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'ort-run-'));
  process.env.TMPDIR = dir;
  process.on('exit', () => fs.rmSync(dir, {recursive: true, force: true}));
}

function load_ort(dir) {
  private_tmpdir();
  const candidates = [path.join(dir, 'node_modules', 'onnxruntime-node'), dir];
  for (const c of candidates) {
    if (fs.existsSync(path.join(c, 'package.json')) && fs.existsSync(path.join(c, 'dist'))) {
      try {
        return require(c);
      } catch (e) {
        fail(`onnxruntime-node in ${c} does not load: ${e.message}`);
      }
    }
  }
  fail(`onnxruntime-node is not installed in ${dir}: run scripts/install-deps.sh (or give --ort DIR)`);
}

/// mulberry32: a small seeded generator, so random inputs are reproducible.
function make_rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function random_tensor(ort, rng, name, type, dims) {
  const count = dims.reduce((p, d) => p * d, 1);
  const t = NPY_TYPES.find((x) => x.type === type);
  if (!t || type === 'float16') fail(`input ${name}: cannot generate random values of type ${type}`);
  const data = new t.array(count);
  for (let i = 0; i < count; ++i) {
    const u = rng();
    if (type === 'float32' || type === 'float64') data[i] = 2 * u - 1;  // [-1, 1)
    else if (type === 'bool') data[i] = u < 0.5 ? 0 : 1;
    else if (type === 'int64' || type === 'uint64') data[i] = BigInt(Math.floor(u * 10));
    else data[i] = Math.floor(u * 10);  // small non-negative integers: safe as indices
  }
  return new ort.Tensor(type, data, dims);
}

function model_inputs(session) {
  // inputMetadata (ORT >= 1.21) gives types and shapes; older: names only.
  if (Array.isArray(session.inputMetadata)) return session.inputMetadata;
  return session.inputNames.map((name) => ({ name, type: 'float32', shape: null }));
}

function build_feeds(ort, session, a) {
  const meta = model_inputs(session);
  const names = new Set(meta.map((m) => m.name));
  for (const name of a.inputs.keys()) {
    if (!names.has(name)) fail(`--input ${name}: the model has no such input (inputs: ${[...names].join(', ')})`);
  }
  for (const name of a.shapes.keys()) {
    if (!names.has(name)) fail(`--input-shape ${name}: the model has no such input (inputs: ${[...names].join(', ')})`);
  }
  const rng = a.seed === null ? null : make_rng(a.seed);
  const feeds = {};
  for (const m of meta) {
    if (a.inputs.has(m.name)) {
      const v = read_npy(a.inputs.get(m.name));
      if (m.type && m.type !== v.type) fail(`--input ${m.name}: the model wants ${m.type}, the file holds ${v.type}`);
      feeds[m.name] = new ort.Tensor(v.type, v.data, v.dims);
      continue;
    }
    if (rng === null) fail(`input ${m.name} has no value: give --input ${m.name}=FILE.npy or --random-inputs SEED`);
    let dims = a.shapes.get(m.name);
    if (dims === undefined) {
      if (!m.shape) fail(`input ${m.name}: shape unknown, give --input-shape ${m.name}:D0,D1,...`);
      const dynamic = m.shape.findIndex((d) => typeof d !== 'number' || d < 0);
      if (dynamic >= 0) {
        fail(`input ${m.name} has a dynamic dimension ${dynamic} ('${m.shape[dynamic]}' in [${m.shape.join(', ')}]): ` +
             `give --input-shape ${m.name}:D0,D1,...`);
      }
      dims = m.shape;
    } else if (m.shape && m.shape.length !== dims.length) {
      fail(`--input-shape ${m.name}: ${dims.length} dimensions, the model's input has ${m.shape.length}`);
    }
    feeds[m.name] = random_tensor(ort, rng, m.name, m.type || 'float32', dims);
  }
  return feeds;
}

/// A file name for an output: ONNX names may hold '/', ':' and the like.
function file_safe(name) {
  const s = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return s === '' ? '_' : s;
}

// --stream: N calls, each per-call input's slice k at call k, each carried
// output fed back; every output written stacked over the calls.
async function stream(a, ort, session, feeds) {
  const names = new Set(Object.keys(feeds));
  const sources = new Map();
  for (const name of a.per_call) {
    if (!names.has(name)) fail(`--per-call ${name}: the model has no such input`);
    const t = feeds[name];
    if (t.dims.length === 0 || t.dims[0] !== a.stream) {
      fail(`--per-call ${name}: the file's first dimension must be the ${a.stream} calls, not [${t.dims.join(', ')}]`);
    }
    sources.set(name, t);
  }
  for (const [out, input] of a.carry) {
    if (!session.outputNames.includes(out)) fail(`--carry ${out}=${input}: the model has no output ${out}`);
    if (!names.has(input)) fail(`--carry ${out}=${input}: the model has no input ${input}`);
  }
  const collected = new Map(session.outputNames.map((n) => [n, []]));
  const ms = [];
  for (let k = 0; k < a.stream; ++k) {
    for (const [name, t] of sources) {
      const dims = t.dims.slice(1);
      const count = dims.reduce((p, d) => p * d, 1);
      feeds[name] = new ort.Tensor(t.type, t.data.slice(k * count, (k + 1) * count), dims);
    }
    const t0 = process.hrtime.bigint();
    let out;
    try {
      out = await session.run(feeds);
    } catch (e) {
      fail(`running ${a.model}, call ${k}: ${e.message}`);
    }
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    for (const n of session.outputNames) collected.get(n).push(out[n]);
    for (const [o, input] of a.carry) feeds[input] = out[o];
  }
  if (a.output_dir !== null) {
    fs.mkdirSync(a.output_dir, { recursive: true });
    for (const n of session.outputNames) {
      const calls = collected.get(n);
      const first = calls[0];
      const data = new first.data.constructor(first.data.length * calls.length);
      calls.forEach((t, k) => data.set(t.data, k * first.data.length));
      write_npy(path.join(a.output_dir, file_safe(n) + '.npy'), first.type, [calls.length, ...first.dims], data);
    }
  }
  ms.sort((x, y) => x - y);
  const n = ms.length;
  const median = n % 2 ? ms[(n - 1) / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  process.stdout.write(`calls=${n}\nmedian_ms=${median.toFixed(4)}\nmin_ms=${ms[0].toFixed(4)}\n`);
}

async function main() {
  const a = parse_args(process.argv.slice(2));
  if (!fs.existsSync(a.model)) fail(`model ${a.model} does not exist`);
  if (!fs.statSync(a.model).isFile()) fail(`model ${a.model} is not a file`);
  const ort = load_ort(a.ort);
  let session;
  try {
    session = await ort.InferenceSession.create(a.model, {
      intraOpNumThreads: a.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      executionProviders: ['cpu'],
    });
  } catch (e) {
    fail(`cannot load model ${a.model}: ${e.message}`);
  }
  const feeds = build_feeds(ort, session, a);
  const run = async () => {
    try {
      return await session.run(feeds);
    } catch (e) {
      fail(`running ${a.model}: ${e.message}`);
    }
  };

  if (a.stream > 0) {
    await stream(a, ort, session, feeds);
    return;
  }
  const outputs = await run();
  if (a.output_dir !== null) {
    fs.mkdirSync(a.output_dir, { recursive: true });
    const used = new Set();
    for (const name of session.outputNames) {
      const t = outputs[name];
      let base = file_safe(name);
      while (used.has(base)) base += '_';  // two names that sanitize alike
      used.add(base);
      write_npy(path.join(a.output_dir, base + '.npy'), t.type, t.dims, t.data);
    }
  }
  if (a.bench > 0) {
    for (let i = 0; i < a.warmup; ++i) await run();
    const ms = [];
    for (let i = 0; i < a.bench; ++i) {
      const t0 = process.hrtime.bigint();
      await run();
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((x, y) => x - y);
    const n = ms.length;
    const median = n % 2 ? ms[(n - 1) / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    process.stdout.write(`median_ms=${median.toFixed(4)}\nruns=${n}\nmin_ms=${ms[0].toFixed(4)}\n`);
  }
  if (a.output_dir === null && a.bench === 0) {
    for (const name of session.outputNames) {
      const t = outputs[name];
      process.stdout.write(`output ${name} ${t.type} [${t.dims.join(',')}]\n`);
    }
  }
}

main().catch((e) => {
  if (e instanceof UsageError) process.stderr.write(`ort_run: error: ${e.message}\n`);
  else process.stderr.write(`ort_run: internal error: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
