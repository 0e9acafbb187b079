// What ort_run.js and ort_batch.js share: loading ONNX Runtime, and reading
// and writing safetensors files as its tensors.
//
//   const io = require('./ort_io');
//   const ort = io.loadOrt();   // or exit 77 saying it is not installed
//   const feeds = io.readSafetensors('in.safetensors', ort);   // {name: ort.Tensor}
//   io.writeSafetensors('out.safetensors', await session.run(feeds));
'use strict';

const fs = require('fs');

// loadOrt returns onnxruntime-node, or exits 77 (the code ctest reads as
// skipped) saying how to install it.
function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    console.error('skipped: onnxruntime-node is not installed (bash tools/setup.sh --onnx)');
    process.exit(77);
  }
}

// safetensors code -> [ONNX Runtime type, typed array]; float16 travels as
// its raw 16-bit words.
const DTYPES = {
  F32: ['float32', Float32Array], F64: ['float64', Float64Array],
  F16: ['float16', Uint16Array], I8: ['int8', Int8Array], U8: ['uint8', Uint8Array],
  I16: ['int16', Int16Array], U16: ['uint16', Uint16Array],
  I32: ['int32', Int32Array], U32: ['uint32', Uint32Array],
  I64: ['int64', BigInt64Array], U64: ['uint64', BigUint64Array], BOOL: ['bool', Uint8Array],
};
const CODES = Object.fromEntries(Object.entries(DTYPES).map(([code, [type]]) => [type, code]));

// readSafetensors returns {name: ort.Tensor}.
function readSafetensors(path, ort) {
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

// writeSafetensors writes {name: ort.Tensor} in name order.
function writeSafetensors(path, tensors) {
  const header = {};
  const chunks = [];
  let offset = 0;
  for (const name of Object.keys(tensors).sort()) {
    const t = tensors[name];
    if (!CODES[t.type]) throw new Error(`output '${name}' has type ${t.type}, which safetensors.js cannot write`);
    const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = {dtype: CODES[t.type], shape: t.dims, data_offsets: [offset, offset + data.length]};
    chunks.push(data);
    offset += data.length;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(text.length));
  fs.writeFileSync(path, Buffer.concat([length, Buffer.from(text), ...chunks]));
}

module.exports = {loadOrt, readSafetensors, writeSafetensors};
