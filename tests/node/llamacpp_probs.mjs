// llama.cpp's view of a GGUF file, through node-llama-cpp's prebuilt CPU build:
//   node llamacpp_probs.mjs TEXT_FILE N OUT_DIR MODEL.gguf...
// For each model (one process for all: starting llama.cpp costs seconds): tokenizes the
// text with the model's own vocabulary (model.tokenize), keeps the first N ids
// (repeating the text if it is shorter), evaluates them in one controlled pass and
// writes OUT_DIR/<model file name>.json ({"ids": [...], "vocab": V}) and .bin: float32
// [N][V], llama.cpp's next-token distribution after every position (temperature 1, no
// truncation).
import fs from "node:fs";
import { getLlama } from "node-llama-cpp";

const [textFile, nArg, outDir, ...models] = process.argv.slice(2);
const N = Number(nArg);
const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, logLevel: "error" });
for (const modelPath of models) {
const outPrefix = outDir + "/" + modelPath.split("/").pop();
const model = await llama.loadModel({ modelPath });
const text = fs.readFileSync(textFile, "utf8");
let ids = [];
while (ids.length < N) ids = ids.concat(Array.from(model.tokenize(text)));
ids = ids.slice(0, N);
const context = await model.createContext({ contextSize: 256, batchSize: 256, threads: 2 });
const seq = context.getSequence();
const opts = { temperature: 1, topK: 0, topP: 1, minP: 0 };
const input = ids.map((t) => [t, { generateNext: { probabilities: true, options: opts } }]);
const res = await seq.controlledEvaluate(input);
let vocab = 0;
for (const r of res) for (const t of r.next.probabilities.keys()) vocab = Math.max(vocab, t + 1);
const probs = new Float32Array(N * vocab);
res.forEach((r, i) => {
  for (const [t, p] of r.next.probabilities) probs[i * vocab + t] = p;
});
fs.writeFileSync(outPrefix + ".bin", Buffer.from(probs.buffer));
fs.writeFileSync(outPrefix + ".json", JSON.stringify({ ids, vocab, entries: res.map((r) => r.next.probabilities.size) }));
await context.dispose();
await model.dispose();
}
