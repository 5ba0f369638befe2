// The HTTP front door end to end, over raw `node:net` sockets (an HTTP client
// library would hide the very behaviour under test): slowloris, header and
// body caps, pipelining, request framing (Content-Length, chunked), half-close,
// cancellation on disconnect, shutdown with live connections, connection caps,
// keep-alive, malformed requests, HEAD.
//
// A failure message carries the raw bytes exchanged on the connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import { startServer, getJSON, stats, waitForStats, sleep, kvReturned } from './lib.mjs';

const MODEL = 'stories260k';
// stories260k ends generation at </s> (2) and <s> (1): forbidding both makes a
// request run to max_tokens or the end of the context.
const NO_EOS = { 1: -100, 2: -100 };

// ---------------------------------------------------------------- helpers

const show = (bytes, max = 1500) => {
  let s = Buffer.from(bytes).toString('latin1');
  if (s.length > max) s = s.slice(0, max) + `...(${s.length} bytes in all)`;
  return JSON.stringify(s);
};

function rssBytes(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return Number(m[1]) * 1024;
}

// The soft limit on open files of a process (`ulimit -n`).
function fdLimit(pid = 'self') {
  const m = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').match(/^Max open files\s+(\d+|unlimited)/m);
  return m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

const MiB = (b) => (b / 2 ** 20).toFixed(1) + ' MiB';

// One request's bytes. `body`: a string/Buffer sent as is, or an object sent as JSON.
function httpReq(method, path, { body, headers = {}, version = '1.1', host = true } = {}) {
  let b = null;
  if (body !== undefined) b = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  let h = `${method} ${path} HTTP/${version}\r\n`;
  if (host) h += 'Host: 127.0.0.1\r\n';
  if (b) h += `Content-Type: application/json\r\nContent-Length: ${b.length}\r\n`;
  for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(h + '\r\n', 'latin1'), b ?? Buffer.alloc(0)]);
}

// A chunked request body: the pieces as chunks (sizes in hex), then the last chunk.
function chunked(pieces, { ext = [], trailer = '' } = {}) {
  let out = '';
  pieces.forEach((p, i) => { out += Buffer.byteLength(p).toString(16).toUpperCase() + (ext[i] ?? '') + '\r\n' + p + '\r\n'; });
  return out + '0\r\n' + trailer + '\r\n';
}

// Parses one HTTP/1.x response at the start of `buf`. Null while incomplete.
// `head`: the response answers a HEAD request (no body whatever the headers
// say). `closed`: the peer has closed, so a body without framing ends here.
function parseResponse(buf, { head = false, closed = false } = {}) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const headText = buf.subarray(0, end).toString('latin1');
  const lines = headText.split('\r\n');
  const m = lines[0].match(/^HTTP\/(\d\.\d) (\d{3})(?: (.*))?$/);
  if (!m) throw new Error('not a status line: ' + show(lines[0], 200));
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i <= 0) throw new Error('not a header line: ' + show(l, 200));
    (headers[l.slice(0, i).trim().toLowerCase()] ??= []).push(l.slice(i + 1).trim());
  }
  const status = Number(m[2]);
  const r = {
    version: m[1], status, reason: m[3] ?? '', headers, headText, framing: 'none',
    header: (n) => headers[n.toLowerCase()]?.join(', '),
    json() { return JSON.parse(this.body.toString('utf8')); },
  };
  let pos = end + 4;
  if (status < 200 || head || status === 204 || status === 304) return { ...r, body: Buffer.alloc(0), length: pos };
  if (/chunked/i.test(r.header('transfer-encoding') ?? '')) {
    const chunks = [];
    for (;;) {
      const le = buf.indexOf('\r\n', pos);
      if (le < 0) return null;
      const sizeText = buf.subarray(pos, le).toString('latin1').split(';')[0].trim();
      if (!/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error('bad chunk size line: ' + show(buf.subarray(pos, le), 100));
      const size = parseInt(sizeText, 16);
      pos = le + 2;
      if (size === 0) {
        for (;;) {  // trailer fields, then an empty line
          const tl = buf.indexOf('\r\n', pos);
          if (tl < 0) return null;
          const empty = tl === pos;
          pos = tl + 2;
          if (empty) break;
        }
        return { ...r, body: Buffer.concat(chunks), length: pos, framing: 'chunked' };
      }
      if (buf.length < pos + size + 2) return null;
      chunks.push(buf.subarray(pos, pos + size));
      if (buf.subarray(pos + size, pos + size + 2).toString('latin1') !== '\r\n') throw new Error('chunk not followed by CRLF');
      pos += size + 2;
    }
  }
  const cl = r.header('content-length');
  if (cl !== undefined) {
    if (!/^\d+$/.test(cl)) throw new Error('bad Content-Length in a response: ' + show(cl, 100));
    const n = Number(cl);
    if (buf.length < pos + n) return null;
    return { ...r, body: buf.subarray(pos, pos + n), length: pos + n, framing: 'content-length' };
  }
  if (!closed) return null;
  return { ...r, body: buf.subarray(pos), length: buf.length, framing: 'close' };
}

// The first final response in `buf` (1xx skipped), as parseResponse; null if
// incomplete or unparsable.
function finalResponse(buf, opts = { closed: true }) {
  try {
    for (;;) {
      const r = parseResponse(buf, opts);
      if (!r || r.status >= 200) return r;
      buf = buf.subarray(r.length);
    }
  } catch { return null; }
}

// A raw client connection that keeps every byte sent and received.
class Conn {
  constructor(port, { allowHalfOpen = false } = {}) {
    this.sock = net.connect({ port, host: '127.0.0.1', allowHalfOpen });
    this.sock.setNoDelay(true);
    this.sent = [];
    this.received = Buffer.alloc(0);
    this.pending = Buffer.alloc(0);  // received, not parsed yet
    this.interim = [];               // 1xx responses skipped
    this.ended = false;              // the peer sent FIN
    this.closedAt = null;
    this.error = null;
    this.waiters = new Set();
    this.connected = new Promise((resolve, reject) => {
      this.sock.once('connect', resolve);
      this.sock.once('error', reject);
    });
    this.connected.catch(() => {});
    this.closed = new Promise((resolve) => this.sock.once('close', () => {
      this.closedAt = performance.now();
      resolve();
      this.wake();
    }));
    this.sock.on('data', (d) => {
      this.received = Buffer.concat([this.received, d]);
      this.pending = Buffer.concat([this.pending, d]);
      this.wake();
    });
    this.sock.on('end', () => { this.ended = true; this.wake(); });
    this.sock.on('error', (e) => { this.error = e; this.wake(); });
  }

  static async open(port, opts) {
    const c = new Conn(port, opts);
    await c.connected;
    return c;
  }

  wake() { for (const w of [...this.waiters]) w(); }
  get isClosed() { return this.closedAt !== null; }
  get gone() { return this.ended || this.isClosed; }

  write(bytes) {
    const b = Buffer.from(bytes);
    this.sent.push(b);
    return new Promise((resolve) => this.sock.write(b, () => resolve()));
  }

  // The next final response; 1xx interim responses are skipped (kept in this.interim).
  next({ head = false, timeoutMs = 15000 } = {}) {
    return new Promise((resolve, reject) => {
      let timer = null;
      const finish = () => { clearTimeout(timer); this.waiters.delete(check); };
      const check = () => {
        try {
          for (;;) {
            const r = parseResponse(this.pending, { head, closed: this.gone });
            if (!r) break;
            this.pending = this.pending.subarray(r.length);
            if (r.status < 200) { this.interim.push(r); continue; }
            finish();
            resolve(r);
            return;
          }
          if (this.gone) {
            finish();
            reject(new Error('the connection closed before a complete response' +
              (this.error ? ` (${this.error.code})` : '') + '\n' + this.transcript()));
          }
        } catch (e) {
          finish();
          reject(new Error(e.message + '\n' + this.transcript()));
        }
      };
      timer = setTimeout(() => { finish(); reject(new Error(`no complete response within ${timeoutMs} ms\n` + this.transcript())); }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  // Whether the server closes the connection (FIN or reset) within `ms`.
  async closesWithin(ms) {
    if (this.gone) return true;
    return new Promise((resolve) => {
      const t = setTimeout(() => { this.waiters.delete(check); resolve(false); }, ms);
      const check = () => { if (this.gone) { clearTimeout(t); this.waiters.delete(check); resolve(true); } };
      this.waiters.add(check);
    });
  }

  transcript(max = 1500) {
    return `  sent:     ${show(Buffer.concat(this.sent), max)}\n  received: ${show(this.received, max)}` +
      (this.error ? `\n  socket error: ${this.error.code}` : '') + `\n  closed by peer: ${this.gone}`;
  }

  destroy() { this.sock.destroy(); }
}

// One request on a fresh connection: its response and the connection.
async function roundTrip(port, bytes, opts = {}) {
  const c = await Conn.open(port);
  await c.write(bytes);
  const r = await c.next(opts);
  return { r, c };
}

const completionBody = (extra = {}) => ({ model: MODEL, prompt: 'Once upon a time', temperature: 0, ...extra });

async function healthOk(srv, what) {
  const r = await getJSON(srv.url + '/health');
  assert.equal(r.status, 200, `/health after ${what}`);
}

// Opens `n` connections that trickle `GET /health HTTP/1.1\r\nHost: x\r\n`
// one byte a second and never end their head. Resolves once all are connected.
async function slowloris(port, n) {
  const HEAD = 'GET /health HTTP/1.1\r\nHost: x\r\n';
  const MORE = 'X-Slow: y\r\n';
  const byteAt = (i) => (i < HEAD.length ? HEAD[i] : MORE[(i - HEAD.length) % MORE.length]);
  const socks = [];
  const connects = [];
  for (let i = 0; i < n; i++) {
    const sock = net.connect(port, '127.0.0.1');
    const e = { sock, sent: 0, first: null, connectedAt: null, closedAt: null, error: null, got: '', connected: false };
    sock.on('close', () => { e.closedAt = performance.now(); });
    sock.on('error', (err) => { e.error = err.code; });
    sock.on('data', (d) => { if (e.got.length < 300) e.got += d.toString('latin1'); });
    connects.push(new Promise((resolve) => {
      sock.once('connect', () => { e.connected = true; e.connectedAt = performance.now(); resolve(); });
      sock.once('close', resolve);
    }));
    socks.push(e);
  }
  await Promise.all(connects);
  const tick = () => {
    for (const e of socks) {
      if (e.closedAt !== null || !e.connected) continue;
      e.first ??= performance.now();
      e.sock.write(byteAt(e.sent++));
    }
  };
  tick();
  const timer = setInterval(tick, 1000);
  return {
    socks,
    open: () => socks.filter((e) => e.closedAt === null).length,
    stop() { clearInterval(timer); for (const e of socks) e.sock.destroy(); },
  };
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

// ---------------------------------------------------------------- tests

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
