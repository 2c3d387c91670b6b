// Runs an ONNX model with ONNX Runtime (onnxruntime-node), for the export tests:
//   node run_onnx.js MODEL.onnx INPUT.f32 D0,D1,... OUTPUT.f32
// INPUT.f32 is raw little-endian float32 of the given dims; the model's first output is written
// the same way to OUTPUT.f32, and its dims are printed as JSON on stdout.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inputPath, dimsText, outputPath] = process.argv.slice(2);
  if (!outputPath) {
    console.error('usage: node run_onnx.js MODEL.onnx INPUT.f32 D0,D1,... OUTPUT.f32');
    process.exit(2);
  }
  const dims = dimsText.split(',').map(Number);
  const bytes = fs.readFileSync(inputPath);
  const data = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  // One thread and no graph rewrites beyond the basic ones: the reference, not the fastest.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    graphOptimizationLevel: 'basic',
  });
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, dims)};
  const results = await session.run(feeds);
  const out = results[session.outputNames[0]];
  fs.writeFileSync(outputPath, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
  console.log(JSON.stringify({input: session.inputNames[0], output: session.outputNames[0], dims: out.dims}));
}

main().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(1);
});
