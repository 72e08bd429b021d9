// One OpenMP worker pool in `headwise serve`: the scheduler thread's. libgomp keeps a
// pool of workers per thread that ever started a parallel region and counts every
// pool's workers against the cores; with more of them than cores it spins only ~100
// times at a barrier before sleeping in the kernel. A decode step opens ~100 parallel
// regions, so a second pool (the model loaded on the main thread, its workers kept
// alive) made every step pay ~100 sleeps and wake-ups: one client on 2 cores decoded
// 2.5x slower than `headwise run`/`bench` (issue 11). This is a structural check, no
// timing: after a request, the threads named after the main thread ("headwise") must be
// the main thread alone, and those named after the scheduler ("hw-scheduler", which its
// OpenMP workers inherit) exactly --threads.
import { readFileSync, readdirSync } from 'node:fs';
import * as h from './harness.mjs';

const a = h.args();
const THREADS = 2;

// comm of every thread of `pid`, counted by name.
function threadNames(pid) {
  const names = {};
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    let n;
    try { n = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim(); } catch { continue; }  // exited
    names[n] = (names[n] || 0) + 1;
  }
  return names;
}

// The model load's parallel regions must open a pool of 2 even on a 1-core machine, or
// the check could not fail there.
process.env.OMP_NUM_THREADS = String(THREADS);
for (const model of [['--synthetic', 'tiny'], h.stories(a)]) {
  const srv = await h.startServer(a, [...model, '--threads', String(THREADS), '--max-sessions', '2']);
  try {
    // Two requests: the first opens the scheduler's pool, the second runs on it.
    for (let i = 0; i < 2; i++) {
      const r = await h.postJson(srv, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
      h.check(r.status === 200, `completion status ${r.status}: ${r.text}`);
    }
    let names = {};
    // The load thread's workers exit once it has; allow them a moment (a state, not a time).
    for (let i = 0; i < 100; i++) {
      names = threadNames(srv.proc.pid);
      if (names.headwise === 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const what = `${model.join(' ')}: threads by name ${JSON.stringify(names)}`;
    h.check(names.headwise === 1, `${what}: OpenMP workers outlive the model load (a second pool: the ` +
            `scheduler's barriers would sleep at every parallel region); only the main thread may be named 'headwise'`);
    h.check(names['hw-scheduler'] === THREADS,
            `${what}: expected the scheduler and its ${THREADS - 1} OpenMP worker(s) named 'hw-scheduler'`);
    // Decode steps of few rows run on graph::parallel_run's team (graph/team.cpp), whose
    // workers name themselves: one team of --threads, the scheduler being its thread 0.
    h.check(names['hw-team'] === undefined || names['hw-team'] === THREADS - 1,
            `${what}: expected at most one team of ${THREADS - 1} worker(s) named 'hw-team'`);
    console.log(`${what}: one OpenMP pool (the scheduler's)`);
  } finally {
    const e = await srv.stop();
    h.check(e.code === 0, `server exit ${JSON.stringify(e)}`);
  }
}
console.log('PASS omp_pool');
