#!/usr/bin/env node
// Runs many ONNX models under ONNX Runtime (CPU) in one process, each on
// the tensors of its safetensors file, writing its outputs to another (as
// ort_run.js does for one model), for tests that compare hundreds of small
// models with dagrad (tests/onnx/onnx_differential_test.py, and the node tests'
// export round trip, tests/onnx/onnx_node_tests_roundtrip_test.cc).
//
//   node tools/onnx/ort_batch.js MANIFEST
//
// Each line of MANIFEST is `name<TAB>model<TAB>input<TAB>output`. Graph
// optimizations are off, so that each node runs its own kernel. For each
// model it prints `ok NAME`, or `error NAME MESSAGE` (one line) when ONNX
// Runtime refuses the model or its run. Without onnxruntime-node it exits
// 77 (the code ctest reads as skipped) saying so.
'use strict';

const fs = require('fs');
const {loadOrt, readSafetensors, writeSafetensors} = require('./ort_io');

const ort = loadOrt();

const OPTIONS = {executionMode: 'sequential', interOpNumThreads: 1, intraOpNumThreads: 1,
                 graphOptimizationLevel: 'disabled'};

async function runOne(model, input, output) {
  const session = await ort.InferenceSession.create(model, OPTIONS);
  const all = readSafetensors(input, ort);
  const feeds = {};
  for (const name of session.inputNames) {
    if (!(name in all)) throw new Error(`${input}: no tensor '${name}' for the model's input`);
    feeds[name] = all[name];
  }
  writeSafetensors(output, await session.run(feeds));
  await session.release();
}

async function main() {
  if (process.argv.length !== 3) throw new Error('usage: ort_batch.js MANIFEST');
  const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l !== '');
  for (const line of lines) {
    const fields = line.split('\t');
    if (fields.length !== 4) throw new Error(`manifest line without 4 tab-separated fields: ${line}`);
    const [name, model, input, output] = fields;
    try {
      await runOne(model, input, output);
      console.log(`ok ${name}`);
    } catch (e) {
      console.log(`error ${name} ${String(e.message).replace(/\s+/g, ' ')}`);
    }
  }
}

main().catch((e) => {
  console.error(`ort_batch.js: ${e.message}`);
  process.exit(1);
});
