// Shared by the server tests: start `headwise serve` on 127.0.0.1 with an ephemeral
// port, stop it, run `headwise run` for references, load the pinned npm peers, and
// bound everything in time. Arguments every test takes:
//   --headwise BIN --shared DIR --node-modules DIR
import { spawn, execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';

export function args() {
  const a = {};
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) a[v[i].replace(/^--/, '')] = v[i + 1];
  for (const k of ['headwise', 'shared', 'node-modules'])
    if (!a[k]) fail(`missing --${k}`);
  return a;
}

export function fail(msg) {
  console.error(`FAIL: ${msg}`);
  process.exit(1);
}

export function check(cond, msg) {
  if (!cond) fail(msg);
}

// The npm test peers (tests/node/node_modules, installed by tools/setup.sh --test).
// Missing is a failure, not a skip: CI installs them.
export function requirePeer(a, name) {
  if (!existsSync(join(a['node-modules'], name)))
    fail(`${name} is not installed in ${a['node-modules']}: run tools/setup.sh --test (or 'cd tests/node && npm ci')`);
  return createRequire(resolve(a['node-modules'], '..', 'package.json'))(name);
}

export function stories(a) {
  const dir = join(a.shared, 'models', 'stories260K');
  const bin = join(dir, 'stories260K.bin'), tok = join(dir, 'tok512.bin');
  if (!existsSync(bin) || !existsSync(tok)) fail(`${bin} or ${tok} missing (../shared/models)`);
  return [bin, '--tokenizer', tok];
}

// Rejects after `ms` with a message naming what took too long.
export function within(ms, what, promise) {
  let t;
  return Promise.race([
    promise.finally(() => clearTimeout(t)),
    new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]);
}

// Starts the server; resolves to { port, url, proc, exited, stop() } once it prints
// its address. Every server is killed at exit if a test forgets it.
const live = new Set();
process.on('exit', () => { for (const p of live) try { p.kill('SIGKILL'); } catch {} });

export async function startServer(a, serveArgs, { log = false } = {}) {
  const proc = spawn(a.headwise, ['serve', ...serveArgs, '--port', '0', '--host', '127.0.0.1'],
                     { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; if (log) process.stderr.write(d); });
  const exited = new Promise((res) => proc.on('exit', (code, signal) => { live.delete(proc); res({ code, signal }); }));
  const port = await within(120000, 'server start', new Promise((res, rej) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) res(Number(m[1]));
    });
    exited.then((e) => rej(new Error(`server exited (${JSON.stringify(e)}) before listening: ${stderr}`)));
  }));
  const url = `http://127.0.0.1:${port}`;
  return {
    port, url, proc, exited, stderr: () => stderr,
    async stop(ms = 20000) {
      proc.kill('SIGTERM');
      return within(ms, 'server exit after SIGTERM', exited);
    },
  };
}

export function client(a, srv, extra = {}) {
  const OpenAI = requirePeer(a, 'openai');
  const Ctor = OpenAI.default || OpenAI.OpenAI || OpenAI;
  // No retries: a 429 or an error must reach the test as it is.
  return new Ctor({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000, ...extra });
}

// `headwise run ... --temp 0`: resolves to stdout without its final newline.
export function headwiseRun(a, runArgs) {
  return within(120000, 'headwise run', new Promise((res, rej) => {
    execFile(a.headwise, ['run', ...runArgs, '--temp', '0', '--threads', '1'], { maxBuffer: 1 << 24 },
             (err, stdout, stderr) => {
               if (err) rej(new Error(`headwise run failed: ${stderr}`));
               else res(stdout.replace(/\n$/, ''));
             });
  }));
}

export async function metrics(srv) {
  const r = await within(10000, 'GET /metrics', fetch(`${srv.url}/metrics`));
  const text = await r.text();
  const get = (name) => {
    const m = text.match(new RegExp(`^${name.replace(/[{}"=/]/g, (c) => '\\' + c)} (\\S+)$`, 'm'));
    return m ? Number(m[1]) : 0;
  };
  return { text, get };
}

export async function waitFor(what, ms, cond) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  fail(`${what}: not within ${ms} ms`);
}

export async function postJson(srv, path, body, headers = {}) {
  // fetch's own message for a network error is only "fetch failed": name the cause
  // (ECONNRESET, EPIPE, UND_ERR_SOCKET, ...) so a failure says what the socket saw.
  const r = await within(60000, `POST ${path}`, fetch(`${srv.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  }).catch((e) => {
    const c = e.cause || {};
    throw new Error(`POST ${path} (${String(body).length} bytes): ${e.message}: ${c.code || ''} ${c.message || c}`);
  }));
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, headers: r.headers, text, json };
}

export function median(v) {
  const s = [...v].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}
export function percentile(v, p) {
  const s = [...v].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))];
}
