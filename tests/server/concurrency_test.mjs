// 16 clients at once, mixed prompt and output lengths, half of them streamed: each
// greedy result equals the same request served alone, and the aggregate throughput
// of the batch is printed against one client's (a figure, not a timed assertion:
// the machine is shared).
import * as h from './harness.mjs';

const a = h.args();
const words = 'Once upon a time there was a little girl named Lily who loved to play in the park with her dog'.split(' ');
const requests = Array.from({ length: 16 }, (_, i) => ({
  prompt: words.slice(0, 2 + (i * 5) % (words.length - 2)).join(' '),
  max_tokens: 150 + (i * 37) % 250,
  stream: i % 2 === 1,
}));

async function generate(c, r) {
  const t0 = performance.now();
  const body = { model: 'stories260K', prompt: r.prompt, max_tokens: r.max_tokens, temperature: 0 };
  let text = '', tokens = 0;
  if (r.stream) {
    const s = await c.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    for await (const ev of s) {
      for (const ch of ev.choices) text += ch.text;
      if (ev.usage) tokens = ev.usage.completion_tokens;
    }
  } else {
    const x = await c.completions.create(body);
    text = x.choices[0].text;
    tokens = x.usage.completion_tokens;
  }
  return { text, tokens, ms: performance.now() - t0 };
}

try {
  await h.within(240000, 'concurrency test', (async () => {
    const srv = await h.startServer(a, [...h.stories(a), '--threads', '1', '--max-sessions', '16', '--queue', '16']);
    const c = h.client(a, srv);
    await generate(c, requests[0]);  // warm up
    const alone = [];
    const t0 = performance.now();
    for (const r of requests) alone.push(await generate(c, r));
    const aloneMs = performance.now() - t0;
    const totalTokens = alone.reduce((s, x) => s + x.tokens, 0);

    const t1 = performance.now();
    const together = await Promise.all(requests.map((r) => generate(c, r)));
    const togetherMs = performance.now() - t1;
    for (let i = 0; i < requests.length; i++) {
      h.check(together[i].text === alone[i].text && together[i].tokens === alone[i].tokens,
              `client ${i} ('${requests[i].prompt}', ${requests[i].max_tokens} tokens${requests[i].stream ? ', streamed' : ''}):\n` +
              ` together: ${JSON.stringify(together[i].text)}\n alone:    ${JSON.stringify(alone[i].text)}`);
    }
    const one = totalTokens / (aloneMs / 1000), many = totalTokens / (togetherMs / 1000);
    console.log(`16 clients: ${totalTokens} tokens; one client at a time ${one.toFixed(0)} tokens/s, ` +
                `16 at once ${many.toFixed(0)} tokens/s: ${(many / one).toFixed(2)}x (goal >= 3x)`);
    const m = await h.metrics(srv);
    // Batching happened: some decode steps advanced more than one sequence.
    const steps = m.get('headwise_decode_batch_size_count'), single = m.get('headwise_decode_batch_size_bucket{le="1"}');
    console.log(`decode steps: ${steps}, of them with one sequence: ${single}; mean batch ${(m.get('headwise_decode_batch_size_sum') / steps).toFixed(2)}`);
    h.check(steps > single, 'no decode step batched more than one sequence');
    h.check(m.get('headwise_active_sessions') === 0 && m.get('headwise_queue_length') === 0, 'sessions left active');
    h.check((await srv.stop()).code === 0, 'server exit code');
  })());
  console.log('PASS');
  process.exit(0);
} catch (e) {
  h.fail(e.stack || String(e));
}
