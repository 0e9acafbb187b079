#!/usr/bin/env node
// Runs an ONNX model under ONNX Runtime (CPU) on the tensors of a
// safetensors file and writes its outputs to another, as `dagrad eval`
// does, so the two can be compared; with --repeat it also times the run.
//
//   node tools/onnx/ort_run.js --model=toy.onnx --input=in.safetensors \
//       --output=out.safetensors [--threads=N] [--repeat=R]
//
// Every model input is read from the input file under its own name (other
// tensors, such as targets, are ignored). --threads sets ONNX Runtime's
// intra-op threads (0: its default); --repeat=R runs the model R more times
// after one warm-up run and prints "ort_ms_median=<ms> runs=R threads=N".
// Install ONNX Runtime with `bash tools/setup.sh --onnx`; without it this
// exits 77 (the code ctest reads as skipped) saying so.
'use strict';

const fs = require('fs');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('skipped: onnxruntime-node is not installed (bash tools/setup.sh --onnx)');
  process.exit(77);
}

const DTYPES = {
  F32: ['float32', Float32Array], F64: ['float64', Float64Array],
  I32: ['int32', Int32Array], I64: ['int64', BigInt64Array], BOOL: ['bool', Uint8Array],
};

function parseArgs(argv) {
  const args = {threads: '0', repeat: '0'};
  for (const arg of argv) {
    const m = /^--([a-z_]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`unexpected argument '${arg}' (flags look like --name=value)`);
    args[m[1]] = m[2];
  }
  for (const name of ['model', 'input', 'output']) {
    if (!args[name]) throw new Error(`--${name} is required`);
  }
  return args;
}

// readSafetensors returns {name: ort.Tensor}.
function readSafetensors(path) {
  const raw = fs.readFileSync(path);
  const n = Number(raw.readBigUInt64LE(0));
  const header = JSON.parse(raw.subarray(8, 8 + n).toString('utf8'));
  const tensors = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const kind = DTYPES[info.dtype];
    if (!kind) throw new Error(`${path}: tensor '${name}' has unsupported dtype ${info.dtype}`);
    const [begin, end] = info.data_offsets;
    const bytes = raw.subarray(8 + n + begin, 8 + n + end);
    const copy = new Uint8Array(bytes);  // aligned for the typed array
    let data = new kind[1](copy.buffer, 0, (end - begin) / kind[1].BYTES_PER_ELEMENT);
    if (kind[0] === 'bool') data = Uint8Array.from(data).map((v) => v !== 0);
    tensors[name] = new ort.Tensor(kind[0], data, info.shape);
  }
  return tensors;
}

function writeSafetensors(path, tensors) {
  const codes = {float32: 'F32', float64: 'F64', int32: 'I32', int64: 'I64', bool: 'BOOL'};
  const header = {};
  const chunks = [];
  let offset = 0;
  for (const name of Object.keys(tensors).sort()) {
    const t = tensors[name];
    const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = {dtype: codes[t.type], shape: t.dims, data_offsets: [offset, offset + data.length]};
    chunks.push(data);
    offset += data.length;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(text.length));
  fs.writeFileSync(path, Buffer.concat([length, Buffer.from(text), ...chunks]));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const threads = Number(args.threads);
  const options = {executionMode: 'sequential', interOpNumThreads: 1};
  if (threads > 0) options.intraOpNumThreads = threads;
  const session = await ort.InferenceSession.create(args.model, options);
  const all = readSafetensors(args.input);
  const feeds = {};
  for (const name of session.inputNames) {
    if (!(name in all)) throw new Error(`${args.input}: no tensor '${name}' for the model's input`);
    feeds[name] = all[name];
  }
  const outputs = await session.run(feeds);
  writeSafetensors(args.output, outputs);
  const repeat = Number(args.repeat);
  if (repeat > 0) {
    const times = [];
    for (let i = 0; i < repeat; ++i) {
      const start = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    console.log(`ort_ms_median=${median(times).toFixed(4)} runs=${repeat} threads=${threads}`);
  }
}

main().catch((e) => {
  console.error(`ort_run.js: ${e.message}`);
  process.exit(1);
});
