// A 30 s load test with autocannon (npm, pinned in tests/node): 16 connections posting
// sampled completions at a server with 4 sessions and a queue of 12 (so requests wait
// for a session; 429 is allowed but not expected: the faults test covers it). Passes when nothing but 200 and 429 comes back (no errors, no
// timeouts, no other status) and the server is idle and healthy afterwards; prints
// latency p50/p99 and throughput (figures, not assertions).
import * as h from './harness.mjs';

const a = h.args();
const seconds = Number(process.env.HEADWISE_LOAD_SECONDS || 30);

try {
  await h.within((seconds + 90) * 1000, 'load test', (async () => {
    const autocannon = h.requirePeer(a, 'autocannon');
    const srv = await h.startServer(a, [...h.stories(a), '--threads', '1', '--max-sessions', '4', '--queue', '12']);
    const m0 = await h.metrics(srv);
    const result = await autocannon({
      url: srv.url,
      connections: 16,
      duration: seconds,
      timeout: 30,
      requests: [{
        method: 'POST', path: '/v1/completions', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 32, temperature: 0.8, top_p: 0.9 }),
      }],
    });
    // Requests in flight when autocannon stopped still run to their end (a whole
    // response cannot notice the client left): wait for them, bounded.
    await h.waitFor('idle after the load', 20000, async () => {
      const m = await h.metrics(srv);
      return m.get('headwise_active_sessions') === 0 && m.get('headwise_queue_length') === 0;
    });
    const m1 = await h.metrics(srv);
    const codes = Object.keys(result.statusCodeStats || {}).map(Number);
    const n200 = result.statusCodeStats?.['200']?.count ?? 0, n429 = result.statusCodeStats?.['429']?.count ?? 0;
    const tokens = m1.get('headwise_completion_tokens_total') - m0.get('headwise_completion_tokens_total');
    console.log(`autocannon ${seconds} s, 16 connections: ${result.requests.total} requests (${n200} x 200, ${n429} x 429), ` +
                `${(result.requests.total / seconds).toFixed(1)} req/s, ${(tokens / seconds).toFixed(0)} generated tokens/s; ` +
                `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`);
    h.check(result.errors === 0 && result.timeouts === 0, `errors ${result.errors}, timeouts ${result.timeouts}`);
    h.check(codes.every((c) => c === 200 || c === 429), `status codes ${JSON.stringify(result.statusCodeStats)}`);
    h.check(n200 > 0, 'no request succeeded');
    const key = 'headwise_requests_total{endpoint="/v1/completions",status="200"}';
    // autocannon stops counting at the deadline; answers then in flight (at most one per
    // connection) reach the server's count only.
    const served = m1.get(key) - m0.get(key);
    h.check(served >= n200 && served <= n200 + 16, `server counted ${served} x 200, autocannon ${n200}`);
    h.check(m1.get('headwise_active_sessions') === 0 && m1.get('headwise_queue_length') === 0, 'not idle after the load');
    h.check((await fetch(`${srv.url}/health`)).status === 200, 'unhealthy after the load');
    h.check((await srv.stop()).code === 0, 'server exit');
  })());
  console.log('PASS');
  process.exit(0);
} catch (e) {
  h.fail(e.stack || String(e));
}
