// The HTTP front door end to end against hostile and departing clients, over
// raw `node:net` sockets (an HTTP client library would hide the very
// behaviour under test): slowloris and silent connections, cancellation on
// disconnect (mid-request, queued, streamed, after a half-closed pipeline),
// shutdown with live connections, connection caps. Framing, caps, pipelining,
// keep-alive, malformed requests and HEAD are in front_door_protocol.test.mjs;
// the raw-socket helpers in raw_http.mjs.
//
// A failure message carries the raw bytes exchanged on the connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, stats, waitForStats, sleep, kvReturned } from './lib.mjs';
import {
  show, rssBytes, fdLimit, MiB, httpReq, finalResponse, Conn, roundTrip, slowloris, quantile, completionBody, healthOk,
} from './raw_http.mjs';

// stories260k ends generation at </s> (2) and <s> (1): forbidding both makes a
// request run to max_tokens or the end of the context.
const NO_EOS = { 1: -100, 2: -100 };

describe('front door: slowloris', () => {
  let srv;
  before(async () => { srv = await startServer(['--header-timeout', '3']); });
  after(async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  });

  test('1000 trickling heads: /health and a completion still answer; every slow socket is closed; RSS stays small', async () => {
    const HEADER_TIMEOUT = 3;
    const limit = Math.min(fdLimit(), fdLimit(srv.proc.pid));
    const n = Math.max(1, Math.min(1000, limit - 100));
    console.log(`# slowloris: open-file limit ${limit} (test and server), opening ${n} sockets`);
    // Warm up (first request, model pages), then the baseline.
    assert.equal((await roundTrip(srv.port, httpReq('GET', '/health'))).r.status, 200);
    await sleep(200);
    const rss0 = rssBytes(srv.proc.pid);
    let rssPeak = rss0;
    const rssTimer = setInterval(() => { try { rssPeak = Math.max(rssPeak, rssBytes(srv.proc.pid)); } catch {} }, 100);

    const tOpen = performance.now();
    const slow = await slowloris(srv.port, n);
    try {
      const connected = slow.socks.filter((e) => e.connected).length;
      console.log(`# slowloris: ${connected}/${n} connected in ${(performance.now() - tOpen).toFixed(0)} ms`);
      assert.equal(connected, n, 'every slow socket connected');

      // While they trickle: a fresh connection's /health, then a completion.
      const openBefore = slow.open();
      let t = performance.now();
      const health = await roundTrip(srv.port, httpReq('GET', '/health'), { timeoutMs: 5000 });
      const healthMs = performance.now() - t;
      health.c.destroy();
      const openAtHealth = slow.open();
      t = performance.now();
      const comp = await roundTrip(srv.port, httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 8 }) }), { timeoutMs: 15000 });
      const compMs = performance.now() - t;
      comp.c.destroy();
      const openAtCompletion = slow.open();
      console.log(`# slowloris: /health ${healthMs.toFixed(1)} ms with ${openAtHealth}/${n} slow sockets open ` +
        `(${openBefore} before); completion ${compMs.toFixed(1)} ms with ${openAtCompletion} open`);
      assert.equal(health.r.status, 200, health.c.transcript());
      assert.equal(health.r.json().status, 'ok');
      assert.equal(comp.r.status, 200, comp.c.transcript());
      assert.equal(comp.r.json().usage.completion_tokens, 8);
      assert.ok(openAtHealth >= 0.9 * n,
        `the slow sockets were still open while /health answered (${openAtHealth}/${n}): the check ran under load`);

      // Every slow socket is closed by the server, around header-timeout after its first byte.
      const firstByte = Math.min(...slow.socks.map((e) => e.first));
      while (slow.open() > 0 && performance.now() - firstByte < 15000) await sleep(100);
      const open = slow.open();
      const closed = slow.socks.filter((e) => e.closedAt !== null);
      // From the connect, as the server's header deadline runs from the accept
      // (the first bytes go out only once all n have connected).
      const after = closed.map((e) => (e.closedAt - e.connectedAt) / 1000);
      const errors = {};
      for (const e of closed) errors[e.error ?? 'none'] = (errors[e.error ?? 'none'] ?? 0) + 1;
      const answered = closed.filter((e) => e.got).length;
      console.log(`# slowloris: ${closed.length}/${n} closed by the server, ${open} still open 15 s after the first byte; ` +
        (after.length ? `close after connect: min ${Math.min(...after).toFixed(2)} s, median ${quantile(after, 0.5).toFixed(2)} s, ` +
        `max ${Math.max(...after).toFixed(2)} s` : 'none closed') + `; socket errors ${JSON.stringify(errors)}; ${answered} got bytes before the close` +
        (answered ? ` (e.g. ${show(closed.find((e) => e.got).got, 200)})` : ''));
      console.log(`# slowloris: RSS ${MiB(rss0)} before, peak ${MiB(rssPeak)} with the sockets open (+${MiB(rssPeak - rss0)})`);
      assert.equal(open, 0, `every slow socket is closed within 15 s of its first byte (${open} of ${n} still open)`);
      assert.ok(Math.min(...after) >= HEADER_TIMEOUT - 1,
        `no slow socket is closed long before --header-timeout ${HEADER_TIMEOUT} (earliest after ${Math.min(...after).toFixed(2)} s)`);
      assert.ok(rssPeak - rss0 < 100 * 2 ** 20, `RSS grew ${MiB(rssPeak - rss0)} (< 100 MiB)`);
    } finally {
      clearInterval(rssTimer);
      slow.stop();
    }
    await healthOk(srv, 'slowloris');
  });

  test('a connection that sends nothing at all is closed too (logged: which deadline applies)', async () => {
    const c = await Conn.open(srv.port);
    const t = performance.now();
    const closed = await c.closesWithin(15000);
    console.log(`# silent connection: ${closed ? `closed after ${((performance.now() - t) / 1000).toFixed(2)} s` : 'still open after 15 s'}; ` +
      `received ${show(c.received, 200)}`);
    c.destroy();
    assert.ok(closed, 'a connection that never sends a byte does not stay open forever');
  });
});

describe('front door: a client that leaves cancels its request', () => {
  let srv;
  before(async () => { srv = await startServer(['--max-batch', '1']); });
  after(async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  });

  const idle = (s) => s.queue.running === 0 && s.queue.queued === 0 && s.server.requests_in_flight === 0 && kvReturned(s);

  test('socket destroyed right after a long non-streaming request: nothing left running or queued', async () => {
    const c = await Conn.open(srv.port);
    c.sock.write(httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 2000, logit_bias: NO_EOS, temperature: 1 }) }),
      () => c.destroy());
    await c.closed;
    const s = await waitForStats(srv, idle, 5000);
    assert.ok(idle(s), JSON.stringify({ queue: s.queue, in_flight: s.server.requests_in_flight, memory: s.memory }));
  });

  test('a queued request whose client left is cancelled, never completed', async () => {
    const before = await stats(srv);
    const BLOCKERS = 24;  // the victim arrives while many still wait, however slow the machine
    const prompts = ['Once upon a time', 'The cat sat', 'Tom had a red ball', 'Lily went to the park'];
    const blockers = Array.from({ length: BLOCKERS }, (_, i) => fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(completionBody({ prompt: prompts[i % 4] + ' ' + i, max_tokens: 2000, logit_bias: NO_EOS })),
    }).then(async (r) => ({ status: r.status, body: await r.json() })));
    await waitForStats(srv, (s) => s.generation.requests_total >= before.generation.requests_total + BLOCKERS, 10000);
    const victim = await Conn.open(srv.port);
    await victim.write(httpReq('POST', '/v1/completions', { body: completionBody({ prompt: 'The victim', max_tokens: 2000, logit_bias: NO_EOS }) }));
    const queued = await waitForStats(srv, (s) => s.generation.requests_total >= before.generation.requests_total + BLOCKERS + 1, 10000);
    console.log(`# cancel: victim submitted with ${queued.queue.queued} queued, ${queued.queue.running} running`);
    assert.ok(queued.generation.requests_total >= before.generation.requests_total + BLOCKERS + 1, 'the victim reached the engine');
    assert.ok(queued.queue.queued >= 2, `the victim waits behind others (${queued.queue.queued} queued): the test is meaningful`);
    victim.destroy();
    const done = await Promise.all(blockers);
    for (const d of done) assert.equal(d.status, 200, JSON.stringify(d.body));
    const after = await waitForStats(srv, idle, 10000);
    assert.ok(idle(after), JSON.stringify({ queue: after.queue, memory: after.memory }));
    const completed = after.generation.completed - before.generation.completed;
    const cancelled = after.generation.cancelled - before.generation.cancelled;
    console.log(`# cancel: ${completed} completed, ${cancelled} cancelled, engine_cancelled +${after.generation.engine_cancelled - before.generation.engine_cancelled}`);
    assert.equal(completed, BLOCKERS, 'only the blockers completed: the victim was not generated for nobody');
    assert.ok(cancelled >= 1, 'the victim counts as cancelled');
    assert.ok(after.generation.engine_cancelled > before.generation.engine_cancelled, 'the engine dropped it');
  });

  test('a streamed request waiting behind others is cancelled when its client closes after the head', async () => {
    const before = await stats(srv);
    const BLOCKERS = 24;  // seconds of work: the probe finds the client gone long before they are done
    const blockers = Array.from({ length: BLOCKERS }, (_, i) => fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(completionBody({ prompt: `A bird sang ${i}`, max_tokens: 2000, logit_bias: NO_EOS })),
    }).then(async (r) => ({ status: r.status, body: await r.json() })));
    await waitForStats(srv, (s) => s.generation.requests_total >= before.generation.requests_total + BLOCKERS, 10000);
    // An Anthropic stream sends its head, then nothing until the first token.
    const c = await Conn.open(srv.port);
    await c.write(httpReq('POST', '/v1/messages', { body: {
      model: 'stories260k', max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'The victim' }],
    } }));
    for (const t0 = performance.now(); !c.received.includes('\r\n\r\n') && performance.now() - t0 < 10000;) await sleep(10);
    assert.match(c.received.toString('latin1'), /^HTTP\/1\.1 200/, c.transcript());
    c.destroy();
    // Found gone by the stream's probe within a couple of seconds, while
    // the blockers still run: not when its first token is written.
    const dropped = await waitForStats(srv, (s) => s.generation.engine_cancelled > before.generation.engine_cancelled, 8000);
    const finished = dropped.generation.completed - before.generation.completed;
    console.log(`# stream probe: cancelled with ${finished} of ${BLOCKERS} blockers done`);
    assert.ok(dropped.generation.engine_cancelled > before.generation.engine_cancelled, 'the engine dropped the request');
    assert.ok(finished < BLOCKERS, 'it was dropped before it could run');
    for (const d of await Promise.all(blockers)) assert.equal(d.status, 200, JSON.stringify(d.body));
    const after = await waitForStats(srv, idle, 10000);
    assert.ok(idle(after), JSON.stringify({ queue: after.queue, memory: after.memory }));
    assert.equal(after.generation.completed - before.generation.completed, BLOCKERS);
  });

  test('a pipelined request after the client half-closed is cancelled when the client then leaves', async () => {
    const before = await stats(srv);
    const block = (n, tag) => Array.from({ length: n }, (_, i) => fetch(srv.url + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(completionBody({ prompt: `The dog ran ${tag} ${i}`, max_tokens: 2000, logit_bias: NO_EOS })),
    }).then(async (r) => ({ status: r.status, body: await r.json() })));
    const total = (n) => waitForStats(srv, (s) => s.generation.requests_total >= before.generation.requests_total + n, 10000);
    const first = block(4, 'a');
    await total(4);
    // A short completion, then the victim, then FIN. The first waits behind
    // the blockers, so the server reads the FIN before it dispatches the victim.
    const c = await Conn.open(srv.port);
    await new Promise((resolve) => c.sock.end(Buffer.concat([
      httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 1 }) }),
      httpReq('POST', '/v1/completions', { body: completionBody({ prompt: 'The victim', max_tokens: 2000, logit_bias: NO_EOS }) }),
    ]), resolve));
    await total(5);
    // Seconds of work the victim will wait behind: time for the connection's
    // probe (once a second while a half-closed client waits) to find it gone.
    const second = block(24, 'b');
    await total(29);
    assert.equal((await c.next({ timeoutMs: 20000 })).status, 200, c.transcript());
    c.destroy();
    const done = await Promise.all([...first, ...second]);
    for (const d of done) assert.equal(d.status, 200, JSON.stringify(d.body));
    const after = await waitForStats(srv, idle, 10000);
    const completed = after.generation.completed - before.generation.completed;
    const dropped = after.generation.engine_cancelled - before.generation.engine_cancelled;
    console.log(`# half-closed pipeline: ${completed} completed, engine_cancelled +${dropped}`);
    assert.equal(completed, 4 + 1 + 24, 'the victim was not generated for nobody');
    assert.ok(dropped >= 1, 'the engine dropped it before generating it (its client was seen to leave)');
  });
});

describe('front door: shutdown with live connections', () => {
  test('SIGTERM with 100 trickling sockets and 8 live SSE streams: streams end, exit 0 within the grace period', async () => {
    const GRACE = 3;
    const srv = await startServer(['--shutdown-timeout', String(GRACE)]);
    let slow = null;
    try {
      slow = await slowloris(srv.port, 100);
      const streams = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
        const c = await Conn.open(srv.port);
        await c.write(httpReq('POST', '/v1/completions', {
          body: completionBody({ prompt: 'Once upon a time ' + i, max_tokens: 2000, logit_bias: NO_EOS, temperature: 1, stream: true }),
        }));
        return c;
      }));
      // Live: each has its head and a first event.
      const end = performance.now() + 10000;
      while (streams.some((c) => !c.received.includes('data: ')) && performance.now() < end) await sleep(5);
      const live = streams.filter((c) => c.received.includes('data: ') && !c.gone).length;
      const t0 = performance.now();
      srv.proc.kill('SIGTERM');
      const exit = await Promise.race([srv.exited, sleep(15000).then(() => null)]);
      const s = (performance.now() - t0) / 1000;
      console.log(`# shutdown: ${live}/8 streams live at SIGTERM, ${slow.open()}/100 trickling sockets open; ` +
        (exit ? `exited ${JSON.stringify(exit)} after ${s.toFixed(2)} s` : 'still running 15 s after SIGTERM'));
      assert.ok(exit, 'the server exits within 15 s of SIGTERM:\n' + srv.stderr());
      assert.equal(exit.code, 0, srv.stderr());
      assert.ok(s < GRACE + 12, `exits in ${s.toFixed(2)} s`);
      for (const c of streams) await c.closesWithin(2000);
      const summary = streams.map((c) => {
        const r = finalResponse(c.received);
        const body = r ? r.body.toString() : '';
        return { complete: !!r && r.framing === 'chunked', done: body.endsWith('data: [DONE]\n\n'), error: body.includes('"error"'), closed: c.gone };
      });
      console.log(`# shutdown: streams ${JSON.stringify(summary)}`);
      summary.forEach((x, i) => {
        assert.ok(x.closed, `stream ${i} closed`);
        assert.ok(x.complete && x.done, `stream ${i} ended properly with data: [DONE] and the last chunk\n${streams[i].transcript(300)}`);
      });
    } finally {
      slow?.stop();
      if (srv.proc.exitCode === null && srv.proc.signalCode === null) srv.proc.kill('SIGKILL');
    }
  });
});

describe('front door: connection caps', () => {
  for (const [flag, what] of [['--max-connections-per-client', 'per client'], ['--max-connections', 'in all']]) {
    test(`${flag} 4: a 5th connection gets 503 (or a close); after the 4 close, a new one works`, async () => {
      const srv = await startServer([flag, '4', '--keep-alive-timeout', '30', '--header-timeout', '30']);
      try {
        const four = [];
        for (let i = 0; i < 4; i++) four.push(await Conn.open(srv.port));
        await sleep(300);
        const fifth = await Conn.open(srv.port).catch((e) => e);
        let how;
        if (fifth instanceof Error) {
          how = `refused (${fifth.code})`;
        } else {
          // Rejected at accept (503 or a close), or else when it sends a request.
          let closed = await fifth.closesWithin(2000);
          if (!closed && fifth.received.length === 0) {
            how = 'nothing at accept; after a request: ';
            await fifth.write(httpReq('GET', '/health'));
            closed = await fifth.closesWithin(5000);
          } else how = '';
          const r = finalResponse(fifth.received);
          how += r ? `${r.status}, Connection: ${r.header('connection')}` : `no response (${show(fifth.received, 100)})`;
          how += closed ? ', closed' : ', left open';
          assert.ok(closed, `the 5th connection is closed (${what})\n` + fifth.transcript());
          assert.ok(fifth.received.length === 0 || (r && r.status === 503 && /close/i.test(r.header('connection') ?? '')),
            `the 5th connection gets 503 with Connection: close, or just a close\n` + fifth.transcript());
          fifth.destroy();
        }
        console.log(`# cap ${what}: the 5th connection: ${how}`);
        // The four are served.
        for (const c of four) {
          await c.write(httpReq('GET', '/health'));
          const r = await c.next();
          assert.equal(r.status, 200, 'one of the first four\n' + c.transcript());
        }
        for (const c of four) c.destroy();
        // Once they are gone a new one works (give the server a moment to see the closes).
        let last = null;
        const end = performance.now() + 3000;
        while (performance.now() < end) {
          try {
            const { r, c } = await roundTrip(srv.port, httpReq('GET', '/health'), { timeoutMs: 2000 });
            last = `${r.status}\n${c.transcript()}`;
            c.destroy();
            if (r.status === 200) { last = 200; break; }
          } catch (e) { last = e.message; }
          await sleep(100);
        }
        assert.equal(last, 200, 'a new connection works after the four closed: ' + last);
      } finally {
        const r = await srv.stop('SIGTERM');
        assert.equal(r.code, 0, srv.stderr());
      }
    });
  }
});
