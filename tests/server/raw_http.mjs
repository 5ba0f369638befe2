// Raw HTTP/1.x over `node:net` sockets for the front door tests (an HTTP
// client library would hide the very behaviour under test): request bytes
// (plain and chunked), a response parser, a connection that keeps every byte
// sent and received for failure messages, trickling slowloris sockets, and
// the process and statistics bits the tests log. Not a test file itself: the
// tests are front_door_protocol.test.mjs and front_door_clients.test.mjs.
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import { getJSON } from './lib.mjs';

export const MODEL = 'stories260k';

export const show = (bytes, max = 1500) => {
  let s = Buffer.from(bytes).toString('latin1');
  if (s.length > max) s = s.slice(0, max) + `...(${s.length} bytes in all)`;
  return JSON.stringify(s);
};

export function rssBytes(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return Number(m[1]) * 1024;
}

// The soft limit on open files of a process (`ulimit -n`).
export function fdLimit(pid = 'self') {
  const m = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').match(/^Max open files\s+(\d+|unlimited)/m);
  return m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

export const MiB = (b) => (b / 2 ** 20).toFixed(1) + ' MiB';

// One request's bytes. `body`: a string/Buffer sent as is, or an object sent as JSON.
export function httpReq(method, path, { body, headers = {}, version = '1.1', host = true } = {}) {
  let b = null;
  if (body !== undefined) b = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  let h = `${method} ${path} HTTP/${version}\r\n`;
  if (host) h += 'Host: 127.0.0.1\r\n';
  if (b) h += `Content-Type: application/json\r\nContent-Length: ${b.length}\r\n`;
  for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(h + '\r\n', 'latin1'), b ?? Buffer.alloc(0)]);
}

// A chunked request body: the pieces as chunks (sizes in hex), then the last chunk.
export function chunked(pieces, { ext = [], trailer = '' } = {}) {
  let out = '';
  pieces.forEach((p, i) => { out += Buffer.byteLength(p).toString(16).toUpperCase() + (ext[i] ?? '') + '\r\n' + p + '\r\n'; });
  return out + '0\r\n' + trailer + '\r\n';
}

// Parses one HTTP/1.x response at the start of `buf`. Null while incomplete.
// `head`: the response answers a HEAD request (no body whatever the headers
// say). `closed`: the peer has closed, so a body without framing ends here.
export function parseResponse(buf, { head = false, closed = false } = {}) {
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
export function finalResponse(buf, opts = { closed: true }) {
  try {
    for (;;) {
      const r = parseResponse(buf, opts);
      if (!r || r.status >= 200) return r;
      buf = buf.subarray(r.length);
    }
  } catch { return null; }
}

// A raw client connection that keeps every byte sent and received.
export class Conn {
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
export async function roundTrip(port, bytes, opts = {}) {
  const c = await Conn.open(port);
  await c.write(bytes);
  const r = await c.next(opts);
  return { r, c };
}

export const completionBody = (extra = {}) => ({ model: MODEL, prompt: 'Once upon a time', temperature: 0, ...extra });

export async function healthOk(srv, what) {
  const r = await getJSON(srv.url + '/health');
  assert.equal(r.status, 200, `/health after ${what}`);
}

// Opens `n` connections that trickle `GET /health HTTP/1.1\r\nHost: x\r\n`
// one byte a second and never end their head. Resolves once all are connected.
export async function slowloris(port, n) {
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

export const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
