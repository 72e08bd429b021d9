// Benchmarks of `headwise serve` (figures for bench/README.md; run under
// `flock /tmp/bench.lock`):
//   overhead     one streamed greedy request vs `headwise run` on the same prompt and
//                threads: decode tokens/s of each, alternating, medians and ranges
//   ttft         time to first token of a 512-token prompt (streamed, max_tokens 1)
//                next to `headwise run`'s prefill of the same tokens
//   concurrency  1/4/16/64 clients, each streaming one greedy request: aggregate
//                generated tokens/s and p50/p99 of the time between a client's tokens
// usage: node bench/serve_bench.mjs --headwise build/headwise [--models gpt2-small,llama-134m]
//        [--threads 2] [--repeats 3] [--gen 64 (tokens per request)] [--only overhead|ttft|concurrency]
import { spawn, execFile } from 'node:child_process';

const opt = { models: 'gpt2-small,llama-134m', threads: '2', repeats: '3', only: '', gen: '64', overhead_model: '' };
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
if (!opt.headwise) { console.error('usage: serve_bench.mjs --headwise BIN [...]'); process.exit(2); }
const T = opt.threads;

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
const range = (v) => `${Math.min(...v).toFixed(1)}-${Math.max(...v).toFixed(1)}`;
const ids = (n, seed) => Array.from({ length: n }, (_, i) => 3 + ((i * 7919 + seed * 104729) % 30000));

async function startServer(model, extra) {
  const proc = spawn(opt.headwise, ['serve', '--synthetic', model, '--port', '0', '--threads', T, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((res, rej) => {
    let out = '';
    proc.stdout.on('data', (d) => { out += d; const m = out.match(/127\.0\.0\.1:(\d+)/); if (m) res(Number(m[1])); });
    proc.on('exit', (c) => rej(new Error(`server exited ${c}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((r) => { proc.on('exit', r); proc.kill('SIGTERM'); }) };
}

// One streamed completion; returns the arrival time of every token event and usage.
async function stream(url, prompt, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
  const times = [];
  let usage = null, buf = '';
  const dec = new TextDecoder();
  for await (const part of r.body) {
    const now = performance.now();
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) usage = j.usage;
      // no tokenizer: each token's text is "id\n", one event per token
      for (const c of j.choices) for (let n = (c.text.match(/\n/g) || []).length; n > 0; n--) times.push(now);
    }
  }
  return { t0, times, usage };
}

function run(model, tokens, steps) {
  return new Promise((res, rej) => execFile(opt.headwise, ['run', '--synthetic', model, '--tokens', tokens.join(','), '-n', String(steps),
    '--temp', '0', '--threads', T], { maxBuffer: 1 << 24 }, (e, out, err) => {
    if (e) return rej(e);
    const m = err.match(/prompt (\d+) tokens, ([\d.]+) tokens\/s \| generated (\d+) tokens, ([\d.]+) tokens\/s/);
    res({ prefill_tps: Number(m[2]), gen: Number(m[3]), gen_tps: Number(m[4]), out });
  }));
}

// `headwise bench`'s warm decode rate (it repeats after a warm-up; run's own rate
// includes a fresh process's first, slower decodes).
function benchDecode(model, promptLen, gen) {
  return new Promise((res, rej) => execFile(opt.headwise, ['bench', '--synthetic', model, '--prompt-len', String(promptLen),
    '--gen-len', String(gen), '--threads', T, '--no-peak', '--json'], { maxBuffer: 1 << 26 }, (e, out) => {
    if (e) return rej(e);
    const j = JSON.parse(out);
    const d = j.decode?.tokens_per_s;
    res(typeof d === 'number' ? d : d?.median);
  }));
}

async function overhead(model) {
  const prompt = ids(16, 1), gen = Number(opt.gen);
  const srv = await startServer(model, ['--max-sessions', '1', '--max-context', '512']);
  await stream(srv.url, prompt, 4);
  const s = [], r = [];
  for (let i = 0; i < Number(opt.repeats); i++) {
    const x = await stream(srv.url, prompt, gen);
    s.push((x.times.length - 1) / ((x.times.at(-1) - x.times[0]) / 1000));
    r.push((await run(model, prompt, prompt.length + gen - 1)).gen_tps);
  }
  await srv.stop();
  const b = [];
  for (let i = 0; i < Number(opt.repeats); i++) b.push(await benchDecode(model, prompt.length, gen));
  console.log(`overhead ${model}: headwise bench (warm, in-process) decode ${median(b).toFixed(2)} tokens/s (${range(b)}): ` +
              `server/bench ${(median(s) / median(b)).toFixed(3)}`);
  console.log(`overhead ${model}: one streamed greedy request ${median(s).toFixed(2)} tokens/s (${range(s)}), ` +
              `headwise run ${median(r).toFixed(2)} tokens/s (${range(r)}): server/run ${(median(s) / median(r)).toFixed(3)} ` +
              `(${((1 - median(s) / median(r)) * 100).toFixed(1)}% slower; goal < 3%)`);
}

async function ttft(model) {
  const prompt = ids(512, 2);
  const srv = await startServer(model, ['--max-sessions', '1', '--max-context', '1024', '--prefill-chunk', '512']);
  await stream(srv.url, ids(8, 3), 1);
  const t = [], p = [];
  for (let i = 0; i < Number(opt.repeats); i++) {
    const x = await stream(srv.url, prompt, 1);
    t.push(x.times[0] - x.t0);
    p.push(512 / (await run(model, prompt, 513)).prefill_tps * 1000);
  }
  await srv.stop();
  console.log(`ttft ${model}: 512-token prompt, time to first token ${median(t).toFixed(0)} ms (${range(t)}); ` +
              `headwise run's prefill of it ${median(p).toFixed(0)} ms (${range(p)})`);
}

async function concurrency(model) {
  const srv = await startServer(model, ['--max-sessions', '64', '--queue', '64', '--max-context', '256']);
  await stream(srv.url, ids(8, 3), 2);
  for (const clients of [1, 4, 16, 64]) {
    const gen = Number(opt.gen);
    const t0 = performance.now();
    const res = await Promise.all(Array.from({ length: clients }, (_, c) => stream(srv.url, ids(32, 10 + c), gen)));
    const wall = (performance.now() - t0) / 1000;
    const tokens = res.reduce((s, x) => s + x.usage.completion_tokens, 0);
    const gaps = res.flatMap((x) => x.times.slice(1).map((t, i) => t - x.times[i]));
    const first = res.map((x) => x.times[0] - x.t0);
    console.log(`concurrency ${model}: ${String(clients).padStart(2)} clients x ${gen} tokens: ${(tokens / wall).toFixed(1)} tokens/s aggregate, ` +
                `per-token latency p50 ${pct(gaps, 50).toFixed(1)} ms p99 ${pct(gaps, 99).toFixed(1)} ms, ` +
                `time to first token p50 ${pct(first, 50).toFixed(0)} ms (${wall.toFixed(1)} s)`);
  }
  await srv.stop();
}

for (const model of opt.models.split(',')) {
  if (!opt.only || opt.only === 'overhead') await overhead(model);
  if (!opt.only || opt.only === 'ttft') await ttft(model);
  if (!opt.only || opt.only === 'concurrency') await concurrency(model);
}
