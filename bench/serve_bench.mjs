// Benchmarks of `headwise serve` (figures for bench/README.md; run under
// `flock /tmp/bench.lock`). Every figure is a median with its range over --repeats
// runs, printed next to the load average (1 min, before the run) and the CPU time per
// wall second of the process measured (how many cores it actually got):
//   overhead     one streamed greedy request vs `headwise run` (fresh process) on the
//                same prompt, threads and KV type, in --pairs back-to-back pairs (order
//                alternating; run with the server's GOMP_SPINCOUNT): the median of the
//                per-pair ratios server/run with its 95% interval, which says whether the
//                < 3% goal is met, missed or unresolved; and, in CPU time (which the
//                machine's drift hardly moves), what the server spends per token outside
//                its compute threads (HTTP + main threads) as a share of run's time per
//                token, with the client's own CPU per token beside it
//   ttft         time to first token of a 512-token prompt (streamed, max_tokens 1) next
//                to `headwise run`'s prefill of the same tokens
//   concurrency  --clients levels (1/4/16/64), each client streaming one greedy request
//                (--prompt-len token ids, --gen tokens): aggregate generated tokens/s,
//                N clients / 1 client, p50/p99 time between a client's tokens, p50 TTFT
//   llama-server the same sweep against llama.cpp's llama-server and headwise serve on
//                each GGUF file (--llama-server BIN --gguf FILES|NAMES; default
//                llama-134m,gpt2-small, written once by bench/serve_ggufs.py): both --threads, f16 KV
//                cache, greedy, ignore_eos, the same token-id prompts and max_tokens,
//                llama-server with as many slots as clients (continuous batching);
//                aggregate tokens/s of both, the ratio per level, and the ratio at equal
//                p99 per-token latency (llama-server's curve interpolated at headwise's p99)
// usage: node bench/serve_bench.mjs --headwise build/headwise [--models gpt2-small,llama-134m]
//        (synthetic names or model files) [--kv-type f32|f16|bf16] [--pairs 10]
//        [--threads 2] [--repeats 3] [--gen 64] [--prompt-len 32] [--clients 1,4,16,64]
//        [--only overhead|ttft|concurrency|llama-server] [--serve-args "--omp-spin 300000 ..."]
//        [--llama-server /tmp/headwise-llama-cpp/build/bin/llama-server [--gguf llama-134m,gpt2-small|FILE,...]]
// Issue 11's rows (1/4/16/64 clients, gpt2-small and llama-134m, both servers), one command:
//   flock /tmp/bench.lock node bench/serve_bench.mjs --headwise build/headwise --only llama-server \
//     --llama-server /tmp/headwise-llama-cpp/build/bin/llama-server --gen 64 --repeats 2
import { spawn, execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import { loadavg } from 'node:os';

const opt = { models: 'gpt2-small,llama-134m', threads: '2', repeats: '3', only: '', gen: '64', 'prompt-len': '32',
              clients: '1,4,16,64', 'llama-server': '', gguf: '', ctx: '256', pairs: '10', 'kv-type': '', 'serve-args': '' };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in opt) && k !== 'headwise') { console.error(`serve_bench.mjs: unknown option --${k}`); process.exit(2); }
  opt[k] = process.argv[i + 1];
}
if (!opt.headwise) { console.error('usage: serve_bench.mjs --headwise BIN [...] (see the top of this file)'); process.exit(2); }
const T = opt.threads, R = Number(opt.repeats), GEN = Number(opt.gen), PLEN = Number(opt['prompt-len']);
const LEVELS = opt.clients.split(',').map(Number);
const GGUFS = [];  // [label, file] of the llama-server comparison
if (opt['llama-server'] || opt.only === 'llama-server') {
  // Checked before anything runs: a missing binary must not cost the other figures' time.
  const bin = opt['llama-server'];
  if (!bin || !existsSync(bin)) {
    console.error(`serve_bench.mjs: --llama-server ${bin || '(not given)'} does not exist: build it with ` +
                  'bench/build_llama_cpp.sh (it writes /tmp/headwise-llama-cpp/build/bin/llama-server), ' +
                  'or leave --llama-server out for the headwise-only figures');
    process.exit(2);
  }
  // --gguf: files, or the names bench/serve_ggufs.py writes (llama-134m, gpt2-small).
  for (const g of (opt.gguf || 'llama-134m,gpt2-small').split(',').filter(Boolean)) {
    if (existsSync(g)) { GGUFS.push([g.replace(/^.*\//, '').replace(/\.gguf$/, ''), g]); continue; }
    if (!['llama-134m', 'gpt2-small'].includes(g)) {
      console.error(`serve_bench.mjs: --gguf ${g} is neither a file nor llama-134m / gpt2-small (which ` +
                    'bench/serve_ggufs.py writes)');
      process.exit(2);
    }
    const out = execFileSync('/usr/bin/python3', [new URL('serve_ggufs.py', import.meta.url).pathname, '--headwise', opt.headwise, g],
                             { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    GGUFS.push([g, out.trim().split('\n').at(-1).split('=')[1]]);
  }
}

// ---- statistics and the conditions of a run ----
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };
const f = (x, d = 1) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(d));
const mr = (v, d = 1) => `${f(median(v), d)} (${f(Math.min(...v), d)}-${f(Math.max(...v), d)})`;
const ids = (n, seed) => Array.from({ length: n }, (_, i) => 3 + ((i * 7919 + seed * 104729) % 30000));
const load1 = () => loadavg()[0];
const TICK = 100;  // USER_HZ: /proc times are in 1/100 s on Linux
// CPU seconds of a live process (user + system), or of this process's reaped children.
const procCpu = (pid) => { try { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) / TICK; } catch { return NaN; } };
const childrenCpu = () => { const s = readFileSync('/proc/self/stat', 'utf8'); const x = s.slice(s.lastIndexOf(')') + 2).split(' '); return (Number(x[13]) + Number(x[14])) / TICK; };
// Runs fn while measuring the wall time, the load average before it and the CPU
// seconds per wall second of `pid` (a server) or of the children it spawned and reaped.
async function measured(pid, fn) {
  const la = load1(), c0 = pid ? procCpu(pid) : childrenCpu(), t0 = performance.now();
  const value = await fn();
  const wall = (performance.now() - t0) / 1000, cpu = (pid ? procCpu(pid) : childrenCpu()) - c0;
  return { value, la, cores: cpu / wall, wall };
}
// Voluntary context switches of the server's compute threads (the scheduler and its
// OpenMP workers, named hw-scheduler): a thread that sleeps at a barrier instead of
// spinning switches once per parallel region (~100 per decode step), one that spins ~0.
function computeSwitches(pid) {
  let n = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim() !== 'hw-scheduler') continue;
      n += Number(readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8').match(/^voluntary_ctxt_switches:\s+(\d+)/m)[1]);
    } catch { /* exited */ }
  }
  return n;
}
// CPU seconds per thread name of `pid`, from /proc/PID/task/TID/schedstat (nanoseconds
// on the CPU: exact, where /proc/PID/stat counts 10 ms ticks). Names: hw-scheduler (the
// scheduler thread and its OpenMP workers: the compute), hw-http (HTTP workers: parsing,
// JSON, socket writes), headwise (the main thread: signals).
function threadCpu(pid) {
  const by = {};
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      by[name] = (by[name] || 0) + Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e9;
    } catch { /* exited */ }
  }
  return by;
}
// The GOMP_SPINCOUNT a process runs with (headwise serve sets its own: tools/cmd_serve.cpp).
const spinOf = (pid) => (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((kv) => kv.startsWith('GOMP_SPINCOUNT=')) || '').slice(15);
const cond = (ms) => `[load ${mr(ms.map((m) => m.la), 1)}, cpu/wall ${mr(ms.map((m) => m.cores), 2)}]`;

// ---- servers ----
// Every server is killed when this script exits, also on an error (an orphan would hold
// the ports, the cores and the pipe of whoever reads this script's output).
const live = new Set();
process.on('exit', () => { for (const p of live) try { p.kill('SIGKILL'); } catch { /* gone */ } });
const track = (proc) => { live.add(proc); proc.on('exit', () => live.delete(proc)); return proc; };
async function waitHealthy(url, proc, what) {
  for (let i = 0; i < 1200; i++) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}`);
    try { if ((await fetch(`${url}/health`)).status === 200) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not become healthy in 300 s`);
}
const stopper = (proc) => () => new Promise((r) => { if (proc.exitCode !== null) return r(); proc.on('exit', r); proc.kill('SIGTERM'); });

// model: a --synthetic name, or a file path
async function startHeadwise(model, extra) {
  const src = existsSync(model) ? [model] : ['--synthetic', model];
  const own = opt['serve-args'].split(' ').filter(Boolean);  // e.g. "--omp-spin 300000" for an A/B
  const proc = track(spawn(opt.headwise, ['serve', ...src, '--port', '0', '--threads', T, ...extra, ...own], { stdio: ['ignore', 'pipe', 'inherit'] }));
  const port = await new Promise((res, rej) => {
    let out = '';
    proc.stdout.on('data', (d) => { out += d; const m = out.match(/127\.0\.0\.1:(\d+)/); if (m) res(Number(m[1])); });
    proc.on('exit', (c) => rej(new Error(`headwise serve exited ${c}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, 'headwise serve');
  return { url, pid: proc.pid, stop: stopper(proc), name: 'headwise' };
}

let llamaPort = 18000 + (process.pid % 1000) * 10;
async function startLlamaServer(gguf, slots, ctxPerSlot) {
  const port = llamaPort++;
  // -np slots with continuous batching (-cb), ctxPerSlot positions each; f16 KV (its
  // default); no prompt cache reuse between requests (the requests say cache_prompt false).
  const args = ['-m', gguf, '--host', '127.0.0.1', '--port', String(port), '-t', T, '-tb', T,
                '-np', String(slots), '-c', String(slots * ctxPerSlot), '-cb', '-b', '2048', '-ub', '512'];
  const proc = track(spawn(opt['llama-server'], args, { stdio: ['ignore', 'ignore', 'pipe'] }));
  let err = '';
  proc.stderr.on('data', (d) => { err = (err + d).slice(-4000); });
  const url = `http://127.0.0.1:${port}`;
  try { await waitHealthy(url, proc, 'llama-server'); } catch (e) { proc.kill('SIGKILL'); throw new Error(`${e.message}\n${err}`); }
  return { url, pid: proc.pid, stop: stopper(proc), name: 'llama-server' };
}

// One streamed completion: the arrival time of every token event and the usage.
// Without a tokenizer headwise's text is "id\n" per token (one event may carry several
// when the client reads late); with one, each event with text is one token. node:http,
// not fetch: the client shares the cores with the server it measures, and fetch's web
// streams cost it ~3x the CPU per event.
// A connection per request: a kept-alive one that the server closed meanwhile (llama-server
// does) would fail the next request.
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
function stream(url, prompt, maxTokens, extra = {}) {
  const t0 = performance.now();
  const body = JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true,
                                stream_options: { include_usage: true }, ...extra });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/completions`, { method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => reject(new Error(`status ${res.statusCode}: ${text}`)));
        return;
      }
      const times = [];
      let usage = null, buf = '';
      res.on('data', (part) => {
        const now = performance.now();
        buf += part;
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, k);
          buf = buf.slice(k + 2);
          if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
          const j = JSON.parse(ev.slice(6));
          if (j.usage) usage = j.usage;
          for (const c of j.choices || []) {
            if (!c.text) continue;
            const nl = /^(\d+\n)+$/.test(c.text) ? c.text.split('\n').length - 1 : 1;
            for (let n = 0; n < nl; n++) times.push(now);
          }
        }
      });
      res.on('end', () => resolve({ t0, times, tokens: usage?.completion_tokens ?? times.length }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---- measurements ----
// model: a --synthetic name, or a file path (a GGUF file, ...)
const modelArgs = (model) => (existsSync(model) ? [model] : ['--synthetic', model]);
const kvArgs = () => (opt['kv-type'] ? ['--kv-type', opt['kv-type']] : []);
function run(model, tokens, steps, env = {}) {
  return new Promise((res, rej) => execFile(opt.headwise, ['run', ...modelArgs(model), '--tokens', tokens.join(','), '-n', String(steps),
    '--temp', '0', '--threads', T, ...kvArgs()], { maxBuffer: 1 << 24, env: { ...process.env, ...env } }, (e, out, err) => {
    if (e) return rej(e);
    const m = err.match(/prompt (\d+) tokens, ([\d.]+) tokens\/s \| generated (\d+) tokens, ([\d.]+) tokens\/s/);
    if (!m) return rej(new Error(`headwise run printed no rates:\n${err}`));
    res({ prefill_tps: Number(m[2]), gen: Number(m[3]), gen_tps: Number(m[4]) });
  }));
}

// Distribution-free confidence interval of a median: the k-th smallest and k-th largest
// of n values, k the largest with P(Binomial(n, 1/2) < k) <= (1 - level)/2. Null when n
// is too small for the level (n < 6 at 95%).
function medianCI(v, level = 0.95) {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  let cum = 0, k = 0, c = 1;  // c = C(n, i)
  for (let i = 0; i < n; i++) {
    cum += c / 2 ** n;
    if (cum > (1 - level) / 2) break;
    k = i + 1;
    c = (c * (n - i)) / (i + 1);
  }
  return k >= 1 ? [s[k - 1], s[n - k]] : null;
}

// Server overhead: one streamed greedy request against `headwise run` on the same token
// ids, threads, KV type and OpenMP barrier spin (run gets the server's GOMP_SPINCOUNT, so
// the two differ by the server alone), in --pairs pairs taken back to back (which side
// goes first alternates, so a drift of the machine's speed falls on both sides alike).
// The figure is the median of the per-pair ratios server/run with its 95% interval: the
// goal (< 3% slower) is resolved when the interval lies above 0.97 (met) or below it
// (not met). The server's decode rate is taken between its first and last token events;
// run's is its own "generated tokens/s" (a fresh process: its first decodes are included).
// On a shared machine that wall-time ratio drifts by more than 3% between runs, so the
// server's own work is also counted in CPU time, which the drift hardly moves: what its
// HTTP threads (JSON, socket writes, waking on each token) and main thread spend per
// token, as a share of run's time per token. With every core computing, each of those
// microseconds takes a core from a compute thread and delays the step by about as much,
// so that share estimates the server's cost; the client's CPU per token is printed next
// to it (a cost of any streaming client, not of the server).
async function overhead(model) {
  const prompt = ids(16, 1), P = Number(opt.pairs);
  const srv = await startHeadwise(model, ['--max-sessions', '1', '--max-context', String(Math.max(256, prompt.length + GEN + 8)), ...kvArgs()]);
  const spin = spinOf(srv.pid), runEnv = spin ? { GOMP_SPINCOUNT: spin } : {};
  await stream(srv.url, prompt, 4);
  await run(model, prompt, prompt.length + 4, runEnv);  // the model file in the page cache for both
  const s = [], r = [], ratio = [], switches = [], serverCpu = [], clientCpu = [], share = [];
  let lastServer = null;
  const serverSide = () => measured(srv.pid, async () => {
    const c0 = computeSwitches(srv.pid), t0 = threadCpu(srv.pid), u0 = process.cpuUsage();
    const x = await stream(srv.url, prompt, GEN);
    const t1 = threadCpu(srv.pid), u1 = process.cpuUsage(u0);
    switches.push((computeSwitches(srv.pid) - c0) / x.tokens);
    const d = (k) => ((t1[k] || 0) - (t0[k] || 0)) / x.tokens * 1e6;  // microseconds per token
    lastServer = { compute: d('hw-scheduler'), http: d('hw-http') + d('headwise') };
    serverCpu.push(lastServer);
    clientCpu.push((u1.user + u1.system) / x.tokens);
    return (x.times.length - 1) / ((x.times.at(-1) - x.times[0]) / 1000);
  });
  const runSide = () => measured(0, async () => (await run(model, prompt, prompt.length + GEN - 1, runEnv)).gen_tps);
  for (let i = 0; i < P; i++) {
    let a, b;
    if (i % 2 === 0) { a = await serverSide(); b = await runSide(); } else { b = await runSide(); a = await serverSide(); }
    s.push(a);
    r.push(b);
    ratio.push(a.value / b.value);
    share.push(serverCpu.at(-1).http / (1e6 / b.value));  // HTTP+main CPU per token / run's time per token
  }
  await srv.stop();
  const v = (m) => m.map((x) => x.value);
  const ci = medianCI(ratio), mid = median(ratio);
  const kv = opt['kv-type'] ? `, KV ${opt['kv-type']}` : '';
  const shareCi = medianCI(share);
  console.log(`overhead ${model}${kv}: one streamed greedy request ${mr(v(s), 2)} tokens/s ${cond(s)} (GOMP_SPINCOUNT ${spin || 'libgomp default'} on both sides)`);
  console.log(`overhead ${model}${kv}: the server's compute threads slept ${mr(switches, 1)} times per token ` +
              '(voluntary context switches at OpenMP barriers; see server.omp_spin)');
  console.log(`overhead ${model}${kv}: headwise run (fresh process) ${mr(v(r), 2)} tokens/s ${cond(r)}`);
  console.log(`overhead ${model}${kv}: server CPU per token: compute threads ${mr(serverCpu.map((x) => x.compute), 0)} us, ` +
              `HTTP + main threads ${mr(serverCpu.map((x) => x.http), 0)} us; the client (this node process) ${mr(clientCpu, 0)} us`);
  console.log(`overhead ${model}${kv}: the server's HTTP + main CPU per token / run's time per token: median ` +
              `${f(mid === undefined ? NaN : median(share) * 100, 2)}% (95% interval ${shareCi ? `${f(shareCi[0] * 100, 2)}-${f(shareCi[1] * 100, 2)}%` : 'n/a'}; ` +
              `goal < 3%: ${shareCi ? (shareCi[1] < 0.03 ? 'met by this measure' : shareCi[0] >= 0.03 ? 'NOT met by this measure' : 'not resolved') : 'too few pairs'})`);
  const verdict = !ci ? `too few pairs for a 95% interval (--pairs >= 6)`
    : ci[0] >= 0.97 ? 'goal met (the interval lies above 0.97)'
    : ci[1] < 0.97 ? 'goal NOT met (the interval lies below 0.97)'
    : `not resolved: the interval straddles 0.97 (more --pairs, or a quieter machine)`;
  console.log(`overhead ${model}${kv}: server/run wall time per pair: median ${f(mid, 3)} (${mid <= 1 ? `${f((1 - mid) * 100)}% slower` : `${f((mid - 1) * 100)}% faster`}; goal: < 3% slower), ` +
              `95% interval ${ci ? `${f(ci[0], 3)}-${f(ci[1], 3)}` : 'n/a'}, range ${f(Math.min(...ratio), 3)}-${f(Math.max(...ratio), 3)} ` +
              `over ${P} pairs: ${verdict}`);
}

async function ttft(model) {
  const prompt = ids(512, 2);
  const srv = await startHeadwise(model, ['--max-sessions', '1', '--max-context', '1024', '--prefill-chunk', '512', ...kvArgs()]);
  await stream(srv.url, ids(8, 3), 1);
  const t = [], p = [];
  for (let i = 0; i < R; i++) {
    t.push(await measured(srv.pid, async () => { const x = await stream(srv.url, prompt, 1); return x.times[0] - x.t0; }));
    p.push(await measured(0, async () => 512 / (await run(model, prompt, 513)).prefill_tps * 1000));
  }
  await srv.stop();
  const v = (m) => m.map((x) => x.value);
  console.log(`ttft ${model}: 512-token prompt, time to first token ${mr(v(t), 0)} ms ${cond(t)}; ` +
              `headwise run's prefill of it ${mr(v(p), 0)} ms ${cond(p)}: ratio ${f(median(v(t)) / median(v(p)), 3)}`);
}

// One level: `clients` at once, each streaming a request with its own prompt.
// Returns aggregate tokens/s, per-token gaps (ms) and times to first token (ms).
async function level(srv, clients, round, extra) {
  const t0 = performance.now();
  const res = await Promise.all(Array.from({ length: clients }, (_, c) => stream(srv.url, ids(PLEN, 10 + c + 1000 * round), GEN, extra)));
  const wall = (performance.now() - t0) / 1000;
  const tokens = res.reduce((s, x) => s + x.tokens, 0);
  return { tps: tokens / wall, tokens, gaps: res.flatMap((x) => x.times.slice(1).map((t, i) => t - x.times[i])),
           first: res.map((x) => x.times[0] - x.t0) };
}

// The sweep on one server (started per level by `start(clients)`, or one for all).
// Returns per level {clients, tps[], p50, p99, ttft, ms[]}.
async function sweep(label, start, extra) {
  const out = [];
  let shared = null;
  for (const clients of LEVELS) {
    const srv = shared || (await start(clients));
    if (srv.shared) shared = srv;
    // Warm-up: a prompt of the measured length and 16 tokens, so the first measured
    // round pays no first-use costs (page faults of fresh buffers, thread start-up).
    await stream(srv.url, ids(PLEN, 3), 16, extra);
    const ms = [], gaps = [], first = [];
    for (let i = 0; i < R; i++) {
      const m = await measured(srv.pid, () => level(srv, clients, i, extra));
      ms.push(m);
      gaps.push(...m.value.gaps);
      first.push(...m.value.first);
    }
    if (!srv.shared) await srv.stop();
    const tps = ms.map((m) => m.value.tps);
    const row = { clients, tps, p50: pct(gaps, 50), p99: pct(gaps, 99), ttft: pct(first, 50), ms };
    out.push(row);
    const base = out.find((x) => x.clients === 1);
    console.log(`${label}: ${String(clients).padStart(2)} clients x ${GEN} tokens: ${mr(tps)} tokens/s aggregate` +
                (base && clients !== 1 ? ` (${f(median(tps) / median(base.tps), 2)}x 1 client)` : '') +
                `, per-token p50 ${f(row.p50)} ms p99 ${f(row.p99)} ms, TTFT p50 ${f(row.ttft, 0)} ms ${cond(ms)}`);
  }
  if (shared) await shared.stop();
  return out;
}

async function concurrency(model) {
  const top = Math.max(...LEVELS);
  const srv = await startHeadwise(model, ['--max-sessions', String(top), '--queue', String(top), '--max-context', opt.ctx, ...kvArgs()]);
  srv.shared = true;
  await sweep(`concurrency ${model}`, async () => srv);
}

// llama-server's aggregate tokens/s at p99 latency `p`, interpolated on its sweep
// (log-log between the two levels around p); undefined outside the measured range.
function atP99(rows, p) {
  const pts = rows.map((r) => [r.p99, median(r.tps)]).sort((a, b) => a[0] - b[0]);
  for (let i = 0; i + 1 < pts.length; i++) {
    const [x0, y0] = pts[i], [x1, y1] = pts[i + 1];
    if (p >= x0 && p <= x1) {
      if (x1 === x0) return Math.max(y0, y1);
      const w = (Math.log(p) - Math.log(x0)) / (Math.log(x1) - Math.log(x0));
      return Math.exp(Math.log(y0) + w * (Math.log(y1) - Math.log(y0)));
    }
  }
  return pts.length === 1 && pts[0][0] === p ? pts[0][1] : undefined;
}

async function llamaServer(label, gguf) {
  const top = Math.max(...LEVELS);
  const ctx = Number(opt.ctx);
  const extra = { ignore_eos: true, cache_prompt: false };
  console.log(`llama-server comparison on ${gguf}: ${T} threads, f16 KV cache, ${PLEN}-token prompts (ids), ` +
              `${GEN} tokens each, greedy, ignore_eos; ${R} rounds per level`);
  const hw = await sweep(`headwise serve ${label}`, async () => {
    const s = await startHeadwise(gguf, ['--max-sessions', String(top), '--queue', String(top), '--max-context', String(ctx), '--kv-type', 'f16']);
    s.shared = true;
    return s;
  }, extra);
  const lc = await sweep(`llama-server   ${label}`, (clients) => startLlamaServer(gguf, clients, ctx), extra);
  for (let i = 0; i < hw.length; i++) {
    const h = hw[i], l = lc[i], eq = atP99(lc, h.p99);
    console.log(`ratio ${label} ${String(h.clients).padStart(2)} clients: headwise/llama-server aggregate ${f(median(h.tps) / median(l.tps), 2)} ` +
                `(p99 ${f(h.p99)} vs ${f(l.p99)} ms); at headwise's p99 ${f(h.p99)} ms llama-server gives ` +
                (eq === undefined ? 'n/a (outside its measured p99 range)' : `${f(eq)} tokens/s: ratio ${f(median(h.tps) / eq, 2)} (goal >= 1.2)`));
  }
}

const want = (what) => (opt.only ? opt.only === what : what !== 'llama-server' || opt['llama-server']);
console.log(`serve_bench: ${new Date().toISOString()}, ${T} threads, ${R} repeats, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const model of opt.models.split(',').filter(Boolean)) {
  if (want('overhead')) await overhead(model);
  if (want('ttft')) await ttft(model);
  if (want('concurrency')) await concurrency(model);
}
if (want('llama-server')) for (const [label, gguf] of GGUFS) await llamaServer(label, gguf);
