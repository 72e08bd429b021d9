// The HF tokenizers side of bench/tokenizer_throughput.py: @anush008/tokenizers (the Rust
// `tokenizers` library) encodes the same text --runs times; prints the same JSON line as
// tokenizer_bench (seconds per run, tokens, FNV-1a hash of the ids).
//
// usage: node tokenizer_bench_hf.js TOKENIZER.json TEXT_FILE RUNS
"use strict";
const fs = require("fs");
const path = require("path");

async function main() {
  const [file, textFile, runsArg] = process.argv.slice(2);
  const { Tokenizer } = require(path.join(__dirname, "..", "tests", "node", "node_modules", "@anush008", "tokenizers"));
  const tok = Tokenizer.fromFile(file);
  const text = fs.readFileSync(textFile, "utf8");
  const runs = Number(runsArg || 5);
  const seconds = [];
  let ids = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  let h = 1469598103934665603n;
  const mask = (1n << 64n) - 1n;
  for (const id of ids) h = ((h ^ BigInt(id >>> 0)) * 1099511628211n) & mask;
  console.log(JSON.stringify({ seconds, bytes: Buffer.byteLength(text), tokens: ids.length,
                               ids_hash: h.toString(16).padStart(16, "0") }));
}
main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
