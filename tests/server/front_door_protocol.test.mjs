// The HTTP front door end to end, over raw `node:net` sockets (an HTTP client
// library would hide the very behaviour under test): header and body caps,
// pipelining, request framing (Content-Length, chunked, other transfer
// codings), half-close, keep-alive, long paths, malformed requests, HEAD.
// Clients that trickle, leave or outnumber the caps, and shutdown with live
// connections, are in front_door_clients.test.mjs; the raw-socket helpers in
// raw_http.mjs.
//
// A failure message carries the raw bytes exchanged on the connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, sleep } from './lib.mjs';
import { MODEL, show, httpReq, chunked, Conn, roundTrip, completionBody, healthOk } from './raw_http.mjs';

describe('front door: protocol', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--max-body', '65536', '--keep-alive-timeout', '2', '--header-timeout', '3']);
  });
  after(async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  });

  // A head of exactly `total` bytes (request line, fields, final CRLF) for GET /health.
  const headOf = (total, { oneField = false } = {}) => {
    let h = 'GET /health HTTP/1.1\r\nHost: x\r\n';
    if (oneField) {
      h += 'X-Big: ' + 'a'.repeat(total - h.length - 'X-Big: \r\n\r\n'.length) + '\r\n';
    } else {
      let i = 0;
      while (total - h.length - 2 > 1100) h += `X-Pad-${i++}: ${'a'.repeat(1000)}\r\n`;
      const rest = total - h.length - 2;
      const name = `X-Pad-${i}: `;
      h += name + 'b'.repeat(rest - name.length - 2) + '\r\n';
    }
    h += '\r\n';
    assert.equal(h.length, total);
    return h;
  };

  test('header cap: 200 KB of headers get 431 and a close; a head just under 64 KiB works', async () => {
    const big = 'GET /health HTTP/1.1\r\nHost: x\r\n' +
      Array.from({ length: 200 }, (_, i) => `X-Pad-${i}: ${'a'.repeat(1000)}\r\n`).join('') + '\r\n';
    const c = await Conn.open(srv.port);
    c.write(big);
    const r = await c.next({ timeoutMs: 10000 });
    assert.equal(r.status, 431, c.transcript(600));
    assert.ok(await c.closesWithin(5000), 'closed after the 431\n' + c.transcript(600));
    c.destroy();
    await healthOk(srv, '200 KB of headers');

    // Just over the cap (66000 bytes): 431 as well.
    const over = await Conn.open(srv.port);
    over.write(headOf(66000));
    const ro = await over.next({ timeoutMs: 10000 });
    assert.equal(ro.status, 431, over.transcript(600));
    over.destroy();

    for (const oneField of [false, true]) {
      const { r: ok, c: okc } = await roundTrip(srv.port, headOf(65000, { oneField }), { timeoutMs: 10000 });
      assert.equal(ok.status, 200, `a 65000-byte head (${oneField ? 'one 65 KB field' : '1 KB fields'})\n` + okc.transcript(600));
      assert.equal(ok.json().status, 'ok');
      okc.destroy();
    }
    await healthOk(srv, 'heads near the cap');
  });

  test('pipelining: four requests in one write are all answered, in order, on the one connection', async () => {
    const c = await Conn.open(srv.port);
    await c.write(Buffer.concat([
      httpReq('GET', '/health'),
      httpReq('GET', '/v1/models'),
      httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 2 }) }),
      httpReq('GET', '/health'),
    ]));
    const rs = [];
    for (let i = 0; i < 4; i++) rs.push(await c.next({ timeoutMs: 15000 }));
    const ctx = c.transcript(3000);
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200], ctx);
    assert.equal(rs[0].json().status, 'ok', ctx);
    assert.equal(rs[1].json().object, 'list', ctx);
    assert.equal(rs[1].json().data[0].id, MODEL, ctx);
    const comp = rs[2].json();
    assert.equal(comp.object, 'text_completion', ctx);
    assert.equal(comp.usage.completion_tokens, 2, ctx);
    assert.equal(rs[3].json().status, 'ok', ctx);
    for (const r of rs) assert.notEqual((r.header('connection') ?? '').toLowerCase(), 'close', ctx);
    assert.equal(c.pending.length, 0, 'nothing after the fourth response\n' + ctx);
    assert.ok(!c.gone, 'the connection is still open after the four answers\n' + ctx);
    console.log(`# pipelining: framings ${rs.map((r) => r.framing).join(', ')}`);

    // A streamed (chunked SSE) response in the middle of a pipeline.
    await c.write(Buffer.concat([
      httpReq('GET', '/health'),
      httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 4, stream: true }) }),
      httpReq('GET', '/v1/models'),
    ]));
    const a = await c.next(), s = await c.next(), b = await c.next();
    const ctx2 = c.transcript(3000);
    assert.deepEqual([a.status, s.status, b.status], [200, 200, 200], ctx2);
    assert.match(s.header('content-type'), /^text\/event-stream/, ctx2);
    assert.ok(s.body.toString().endsWith('data: [DONE]\n\n'), ctx2);
    assert.equal(b.json().data[0].id, MODEL, ctx2);
    c.destroy();
  });

  test('two Content-Length headers (different or equal) get 400 and a close; never a 200', async () => {
    const json = JSON.stringify(completionBody({ max_tokens: 1 }));
    // Trailing whitespace keeps the body valid JSON under either length, so only
    // rejecting the framing gives a 400; a server that took the shorter one
    // would also read the rest as a second request.
    const body = json + ' '.repeat(40);
    for (const [a, b] of [[json.length, body.length], [body.length, json.length], [body.length, body.length]]) {
      const c = await Conn.open(srv.port);
      c.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${a}\r\nContent-Length: ${b}\r\n\r\n${body}`);
      const r = await c.next({ timeoutMs: 10000 });
      const closed = await c.closesWithin(5000);
      const what = `Content-Length ${a} and ${b}\n${c.transcript()}`;
      assert.equal(r.status, 400, what);
      assert.doesNotMatch(c.received.toString('latin1'), /HTTP\/1\.[01] 2\d\d/, what);
      assert.ok(closed, 'closed after the 400: ' + what);
      c.destroy();
    }
    await healthOk(srv, 'duplicate Content-Length');
  });

  test('Content-Length with Transfer-Encoding: rejected, or answered once and closed (no smuggled request)', async () => {
    const body = chunked([JSON.stringify(completionBody({ max_tokens: 1 }))]);
    const smuggled = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    const c = await Conn.open(srv.port);
    c.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${body}${smuggled}`);
    const r = await c.next({ timeoutMs: 10000 });
    const closed = await c.closesWithin(5000);
    const statuses = [...c.received.toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]);
    console.log(`# CL + TE: answered ${statuses.join(', ')}`);
    assert.ok(r.status === 400 || r.status === 200, c.transcript());
    assert.equal(statuses.length, 1, 'one response only: the smuggled request is not answered\n' + c.transcript());
    assert.ok(closed, 'the connection is closed after it (RFC 9112 6.3)\n' + c.transcript());
    c.destroy();
  });

  test('chunked request bodies: in one write, in pieces with a trailer; over --max-body: 413', async () => {
    const json = JSON.stringify(completionBody({ max_tokens: 3 }));
    const pieces = [json.slice(0, 10), json.slice(10, 36), json.slice(36)];  // 36 - 10 = 0x1A
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const c = await Conn.open(srv.port);
    await c.write(head + chunked(pieces, { ext: ['', ';foo=bar', ''] }) + httpReq('GET', '/health').toString('latin1'));
    const r = await c.next();
    assert.equal(r.status, 200, c.transcript());
    assert.equal(r.json().usage.completion_tokens, 3, c.transcript());
    const h = await c.next();
    assert.equal(h.status, 200, 'the request after a chunked body\n' + c.transcript());
    c.destroy();

    // The same body trickled: head, then each chunk in its own write, then a trailer.
    const d = await Conn.open(srv.port);
    await d.write(head);
    const body = chunked(pieces, { trailer: 'X-Trailer: 1\r\n' });
    for (let i = 0; i < body.length; i += 17) { await d.write(body.slice(i, i + 17)); await sleep(20); }
    const rd = await d.next();
    assert.equal(rd.status, 200, d.transcript());
    assert.equal(rd.json().usage.completion_tokens, 3, d.transcript());
    d.destroy();

    // Past --max-body (65536): 413, whether counted by Content-Length or by chunks.
    const huge = JSON.stringify(completionBody({ prompt: 'x'.repeat(70000) }));
    const e = await Conn.open(srv.port);
    e.write(httpReq('POST', '/v1/completions', { body: huge }));
    const re = await e.next({ timeoutMs: 10000 });
    assert.equal(re.status, 413, e.transcript(600));
    e.destroy();
    const f = await Conn.open(srv.port);
    f.write(head + chunked(Array.from({ length: 10 }, (_, i) => huge.slice(i * 7100, (i + 1) * 7100))));
    const rf = await f.next({ timeoutMs: 10000 });
    assert.equal(rf.status, 413, f.transcript(600));
    f.destroy();
    await healthOk(srv, 'bodies over --max-body');
  });

  test('half-close: a complete request then FIN still gets its whole response', async () => {
    const c = await Conn.open(srv.port, { allowHalfOpen: true });
    await c.write(httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 4 }) }));
    c.sock.end();
    const r = await c.next({ timeoutMs: 15000 });
    console.log(`# half-close: ${c.interim.length} interim response(s) before the final one`);
    assert.equal(r.status, 200, c.transcript());
    assert.equal(r.json().usage.completion_tokens, 4, c.transcript());
    assert.ok(await c.closesWithin(5000), 'the server closes its side after answering\n' + c.transcript());
    c.destroy();

    // And a streamed one.
    const s = await Conn.open(srv.port, { allowHalfOpen: true });
    await s.write(httpReq('POST', '/v1/completions', { body: completionBody({ max_tokens: 4, stream: true }) }));
    s.sock.end();
    const rs = await s.next({ timeoutMs: 15000 });
    assert.equal(rs.status, 200, s.transcript());
    const events = rs.body.toString().split('\n\n').filter((e) => e);
    assert.equal(events.at(-1), 'data: [DONE]', s.transcript());
    assert.equal(JSON.parse(events.at(-2).slice(6)).usage.completion_tokens, 4, s.transcript());
    s.destroy();
  });

  test('keep-alive: two requests on one connection; an idle one is closed after --keep-alive-timeout', async () => {
    const KEEP_ALIVE = 2;
    const c = await Conn.open(srv.port);
    await c.write(httpReq('GET', '/health'));
    const a = await c.next();
    await sleep(500);
    assert.ok(!c.gone, 'still open 0.5 s after the first answer\n' + c.transcript());
    await c.write(httpReq('GET', '/v1/models'));
    const b = await c.next();
    const t = performance.now();
    assert.equal(a.status, 200, c.transcript());
    assert.equal(b.status, 200, c.transcript());
    const closed = await c.closesWithin((KEEP_ALIVE + 5) * 1000);
    const s = (performance.now() - t) / 1000;
    console.log(`# keep-alive: idle connection ${closed ? `closed after ${s.toFixed(2)} s` : 'still open'} (--keep-alive-timeout ${KEEP_ALIVE})`);
    assert.ok(closed, `closed within ${KEEP_ALIVE + 5} s of idling\n` + c.transcript());
    assert.ok(s >= KEEP_ALIVE - 0.5, `not closed before the timeout (${s.toFixed(2)} s)`);
    assert.ok(s <= KEEP_ALIVE + 2, `closed near the timeout (${s.toFixed(2)} s)`);
    c.destroy();

    // Connection: close and HTTP/1.0 without keep-alive close after the response.
    for (const bytes of [httpReq('GET', '/health', { headers: { Connection: 'close' } }), httpReq('GET', '/health', { version: '1.0' })]) {
      const d = await Conn.open(srv.port);
      await d.write(bytes);
      const r = await d.next();
      assert.equal(r.status, 200, d.transcript());
      assert.ok(await d.closesWithin(1000), 'closed right after the response\n' + d.transcript());
      d.destroy();
    }
  });

  test('transfer codings other than chunked alone: 501 or 400 and a close (no body read as a request)', async () => {
    const smuggled = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    const body = JSON.stringify(completionBody({ max_tokens: 1 }));
    const cases = [
      ['gzip', 'HTTP/1.1', 'gzip', 501],
      ['chunked, gzip', 'HTTP/1.1', 'chunked, gzip', 501],
      ['gzip, chunked', 'HTTP/1.1', 'gzip, chunked', 501],
      ['chunked on HTTP/1.0', 'HTTP/1.0', 'chunked', 400],
    ];
    for (const [what, version, coding, status] of cases) {
      const c = await Conn.open(srv.port);
      c.write(`POST /v1/completions ${version}\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: ${coding}\r\n\r\n${chunked([body])}${smuggled}`);
      const r = await c.next({ timeoutMs: 10000 });
      const closed = await c.closesWithin(5000);
      const statuses = [...c.received.toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]);
      assert.equal(r.status, status, `${what}\n` + c.transcript());
      assert.equal(statuses.length, 1, `${what}: one response only\n` + c.transcript());
      assert.ok(closed, `${what}: closed after it\n` + c.transcript());
      c.destroy();
    }
    await healthOk(srv, 'other transfer codings');
  });

  test('a chunk-size line or trailer that never ends: 400 and a close once past the head limit', async () => {
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    for (const [what, start] of [['a chunk extension', '1;'], ['a trailer field', '0\r\nX-Trailer: ']]) {
      const c = await Conn.open(srv.port);
      c.write(head + start);
      const filler = 'a'.repeat(16 << 10);
      for (let i = 0; i < 12 && !c.gone; i++) await c.write(filler);  // 192 KiB, no line end
      const r = await c.next({ timeoutMs: 10000 });
      assert.equal(r.status, 400, `${what}\n` + c.transcript(400));
      assert.ok(await c.closesWithin(5000), `${what}: closed after the 400\n` + c.transcript(400));
      c.destroy();
    }
    await healthOk(srv, 'endless chunk lines');
  });

  test('a path over 2048 bytes gets 414 and a close; one of 2048 is routed', async () => {
    const c = await Conn.open(srv.port);
    c.write(`GET /v1/responses/${'a'.repeat(60000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const r = await c.next({ timeoutMs: 10000 });
    assert.equal(r.status, 414, c.transcript(400));
    assert.equal(r.json().error.code, 'path_too_long', c.transcript(400));
    assert.ok(await c.closesWithin(5000), 'closed after the 414\n' + c.transcript(400));
    c.destroy();
    const path = '/v1/responses/' + 'b'.repeat(2048 - '/v1/responses/'.length);
    const { r: ok, c: okc } = await roundTrip(srv.port, httpReq('GET', path), { timeoutMs: 10000 });
    assert.equal(ok.status, 404, okc.transcript(400));  // routed: no such response
    okc.destroy();
    await healthOk(srv, 'a 60 KB path');
  });

  test('malformed requests get 400 and a close; the server stays up', async () => {
    const cases = [
      ['binary garbage', Buffer.from('\x00\x01\x02garbage\r\n\r\n', 'latin1')],
      ['a method alone', 'GET\r\n\r\n'],
      ['no version', 'GET /health\r\n\r\n'],
      ['a fourth request-line token', 'GET /health HTTP/1.1 extra\r\nHost: x\r\n\r\n'],
      ['HTTP/9.9', 'GET /health HTTP/9.9\r\nHost: x\r\n\r\n'],
      ['a bad method character', 'G(T /health HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a control character in the target', 'GET /he\x01alth HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a field without a colon', 'GET /health HTTP/1.1\r\nHost x\r\n\r\n'],
      ['whitespace before the colon', 'GET /health HTTP/1.1\r\nHost : x\r\n\r\n'],
      ['a NUL in a field value', 'GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n'],
      ['Content-Length -5', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n'],
      ['Content-Length abc', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
      ['a bad chunk size', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ];
    const failures = [];
    for (const [what, bytes] of cases) {
      const c = await Conn.open(srv.port);
      await c.write(bytes);
      let r = null, err = null;
      try { r = await c.next({ timeoutMs: 6000 }); } catch (e) { err = e; }
      const closed = await c.closesWithin(5000);
      // An unsupported version may be a 505 (RFC 9110 15.6.6).
      const ok = r && (r.status === 400 || (what === 'HTTP/9.9' && r.status === 505)) && closed;
      if (!ok) failures.push(`${what}: ${r ? `status ${r.status}` : 'no response'}, ${closed ? 'closed' : 'left open'}\n${c.transcript(400)}`);
      c.destroy();
      await healthOk(srv, what);
    }
    // TLS on the plain port: a ClientHello's first bytes have no line end at all.
    const tls = await Conn.open(srv.port);
    await tls.write(Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 'latin1'));
    const tlsClosed = await tls.closesWithin(8000);
    console.log(`# TLS ClientHello: ${tlsClosed ? 'closed' : 'left open'}, answered ${show(tls.received, 120)}`);
    if (!tlsClosed || /HTTP\/1\.[01] 2/.test(tls.received.toString('latin1')))
      failures.push(`TLS ClientHello: ${tlsClosed ? 'closed' : 'left open 8 s'}\n${tls.transcript(400)}`);
    tls.destroy();
    await healthOk(srv, 'TLS bytes');
    assert.deepEqual(failures, [], failures.join('\n'));
  });

  test('HEAD /health: the head only (a pipelined GET after it parses)', async () => {
    const c = await Conn.open(srv.port);
    await c.write(Buffer.concat([httpReq('HEAD', '/health'), httpReq('GET', '/health')]));
    const h = await c.next({ head: true });
    const g = await c.next();
    const ctx = c.transcript();
    assert.equal(h.status, 200, ctx);
    assert.match(h.header('content-type') ?? '', /json/, ctx);
    assert.equal(g.status, 200, ctx);
    assert.equal(g.json().status, 'ok', 'the GET right after the HEAD parses: the HEAD sent no body\n' + ctx);
    console.log(`# HEAD: Content-Length ${h.header('content-length')} (GET body ${g.body.length} bytes), Transfer-Encoding ${h.header('transfer-encoding')}`);
    c.destroy();
  });
});
