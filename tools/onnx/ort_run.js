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

const {loadOrt, readSafetensors, writeSafetensors} = require('./ort_io');

const ort = loadOrt();

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

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const threads = Number(args.threads);
  const options = {executionMode: 'sequential', interOpNumThreads: 1, graphOptimizationLevel: 'all'};
  if (threads > 0) options.intraOpNumThreads = threads;
  const session = await ort.InferenceSession.create(args.model, options);
  const all = readSafetensors(args.input, ort);
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
