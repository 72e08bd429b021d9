// `headwise serve` sets libgomp's barrier spin (GOMP_SPINCOUNT) for itself: a thread
// that polls ~6 ms (libgomp's default) at each of a decode step's ~100 barriers keeps
// its core from the compute thread that a competing thread (the HTTP thread, the
// client, another process) took off the CPU, so every region waits a time slice (issue
// 11's one-client p99 gap; tools/cmd_serve.cpp says more). libgomp reads the variable
// when it is loaded, so the server re-executes itself with it set. Structural checks,
// no timing: the serving process's environment (/proc/PID/environ, the same pid the
// test started) holds the spin the rules give, and the restarted server answers.
import { readFileSync } from 'node:fs';
import * as h from './harness.mjs';

const a = h.args();

function environ(pid) {
  const env = {};
  for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

// [what, environment changes, serve arguments, expected GOMP_SPINCOUNT (undefined: none)]
const cases = [
  ['default', {}, [], '1000'],
  ["the user's GOMP_SPINCOUNT", { GOMP_SPINCOUNT: '4321' }, [], '4321'],
  ["the user's OMP_WAIT_POLICY", { OMP_WAIT_POLICY: 'active' }, [], undefined],
  ['--omp-spin over the environment', { GOMP_SPINCOUNT: '4321' }, ['--omp-spin', '250'], '250'],
];
const saved = { GOMP_SPINCOUNT: process.env.GOMP_SPINCOUNT, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY };
for (const [what, env, extra, want] of cases) {
  delete process.env.GOMP_SPINCOUNT;
  delete process.env.OMP_WAIT_POLICY;
  Object.assign(process.env, env);
  const srv = await h.startServer(a, ['--synthetic', 'tiny', '--threads', '2', ...extra]);
  try {
    const got = environ(srv.proc.pid).GOMP_SPINCOUNT;
    h.check(got === want, `${what}: the server runs with GOMP_SPINCOUNT=${got}, expected ${want}`);
    h.check(readFileSync(`/proc/${srv.proc.pid}/cmdline`, 'utf8').split('\0').includes('tiny'),
            `${what}: the restarted server lost its arguments`);
    const r = await h.postJson(srv, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
    h.check(r.status === 200, `${what}: completion status ${r.status}: ${r.text}`);
    console.log(`${what}: GOMP_SPINCOUNT=${got}, serving`);
  } finally {
    const e = await srv.stop();
    h.check(e.code === 0, `${what}: server exit ${JSON.stringify(e)}`);
  }
}
for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
console.log('PASS omp_spin');
