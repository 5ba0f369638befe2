#!/usr/bin/env node
// The HTTP front door under hostile and plain load, on the bundled model:
//
//   node bench/front_door_bench.mjs [build/hearth] [--slow 1000] [--requests 200] [--seconds 5] [--clients 8]
//
// Prints two small tables:
// - GET /health latency (p50/p99 over --requests sequential requests, each on
//   a fresh connection: connect, request, whole response), idle and while
//   --slow slowloris sockets (each trickling `GET /health HTTP/1.1\r\nHost: x\r\n...`
//   one byte a second, never ending its head) are open; the server's RSS
//   (/proc/PID/status VmRSS) idle and with them open; GET /health requests/s
//   over --clients keep-alive connections (one request in flight on each).
// - POST /v1/completions with hostile JSON bodies: 10k, 100k and 1M keys in
//   one object, and 1M keys over 250k small objects; the round trip (write to
//   the end of the response, median of 3) and the status. The server caps keys
//   per object at 4096 and nesting at 64, so the big objects are quick 400s;
//   the spread one is parsed whole. The server runs with --max-body 64 MiB so
//   the bodies reach the parser rather than the 413.
//
// Raw `node:net` sockets throughout; the client shares the machine's cores
// with the server, so on a small machine requests/s measures both.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { args, opt, root } from './options.mjs';

const positional = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
const HEARTH = path.resolve(positional[0] ?? path.join(root, 'build/hearth'));
// The server tests' launcher (it reads the binary from HEARTH_BIN).
process.env.HEARTH_BIN = HEARTH;
const { startServer } = await import('../tests/server/lib.mjs');
const REQUESTS = Number(opt('requests', 200));
const SECONDS = Number(opt('seconds', 5));
const CLIENTS = Number(opt('clients', 8));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(...a);

function fdLimit(pid = 'self') {
  const m = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').match(/^Max open files\s+(\d+|unlimited)/m);
  return m[1] === 'unlimited' ? Infinity : Number(m[1]);
}
const rssBytes = (pid) => Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)[1]) * 1024;
const MiB = (b) => (b / 2 ** 20).toFixed(1);
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};


// Length of the complete response at the start of buf (Content-Length or
// chunked; 1xx skipped), or -1 while incomplete. Also its status.
function responseEnd(buf) {
  let start = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', start);
    if (end < 0) return { length: -1 };
    const head = buf.subarray(start, end).toString('latin1');
    const status = Number(head.slice(9, 12));
    let pos = end + 4;
    if (status < 200) { start = pos; continue; }
    const cl = head.match(/\r\ncontent-length:\s*(\d+)/i);
    if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
      for (;;) {
        const le = buf.indexOf('\r\n', pos);
        if (le < 0) return { length: -1 };
        const size = parseInt(buf.subarray(pos, le).toString('latin1'), 16);
        pos = le + 2;
        if (size === 0) {
          const tl = buf.indexOf('\r\n\r\n', pos - 2);
          return tl < 0 ? { length: -1 } : { length: tl + 4, status, head, bodyAt: end + 4 };
        }
        if (buf.length < pos + size + 2) return { length: -1 };
        pos += size + 2;
      }
    }
    const n = cl ? Number(cl[1]) : 0;
    return buf.length < pos + n ? { length: -1 } : { length: pos + n, status, head, bodyAt: pos };
  }
}

// A keep-alive client connection: request() resolves with {status, body}.
class Conn {
  constructor(port) {
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.setNoDelay(true);
    this.buf = Buffer.alloc(0);
    this.waiter = null;
    this.gone = false;
    this.connected = new Promise((resolve, reject) => { this.sock.once('connect', resolve); this.sock.once('error', reject); });
    this.connected.catch(() => {});
    this.sock.on('data', (d) => { this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d; this.waiter?.(); });
    this.sock.on('close', () => { this.gone = true; this.waiter?.(); });
    this.sock.on('error', () => {});
  }
  request(bytes, timeoutMs = 60000) {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { this.waiter = null; reject(new Error('timeout')); }, timeoutMs);
      this.waiter = () => {
        const r = responseEnd(this.buf);
        if (r.length >= 0) {
          const body = this.buf.subarray(r.bodyAt, r.length).toString('latin1');
          this.buf = this.buf.subarray(r.length);
          this.waiter = null;
          clearTimeout(t);
          resolve({ status: r.status, body });
        } else if (this.gone) {
          this.waiter = null;
          clearTimeout(t);
          reject(new Error('closed: ' + JSON.stringify(this.buf.subarray(0, 200).toString('latin1'))));
        }
      };
      this.sock.write(bytes);
    });
  }
  close() { this.sock.destroy(); }
}

const GET_HEALTH = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';

async function healthLatencies(port, n) {
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const c = new Conn(port);
    await c.connected;
    const r = await c.request(GET_HEALTH);
    ms.push(performance.now() - t);
    c.close();
    if (r.status !== 200) throw new Error('/health answered ' + r.status);
  }
  return ms;
}

async function slowloris(port, n) {
  const HEAD = 'GET /health HTTP/1.1\r\nHost: x\r\n';
  const MORE = 'X-Slow: y\r\n';
  const byteAt = (i) => (i < HEAD.length ? HEAD[i] : MORE[(i - HEAD.length) % MORE.length]);
  const socks = [];
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const e = { sock: net.connect(port, '127.0.0.1'), sent: 0, open: false };
    e.sock.once('connect', () => { e.open = true; resolve(); });
    e.sock.on('close', () => { e.open = false; resolve(); });
    e.sock.on('error', () => {});
    socks.push(e);
  })));
  const tick = () => { for (const e of socks) if (e.open) e.sock.write(byteAt(e.sent++)); };
  tick();
  const timer = setInterval(tick, 1000);
  return {
    open: () => socks.filter((e) => e.open).length,
    stop() { clearInterval(timer); for (const e of socks) e.sock.destroy(); },
  };
}

async function keepAliveRate(port, clients, seconds) {
  const conns = Array.from({ length: clients }, () => new Conn(port));
  await Promise.all(conns.map((c) => c.connected));
  let count = 0, errors = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(conns.map(async (c) => {
    while (performance.now() < end) {
      const r = await c.request(GET_HEALTH);
      if (r.status === 200) count++; else errors++;
    }
  }));
  const wall = (performance.now() - t0) / 1000;
  for (const c of conns) c.close();
  return { rate: count / wall, errors };
}

function bodies() {
  const prefix = '{"model":"stories260k","prompt":"a","max_tokens":1,"x":';
  const object = (n) => {
    const parts = new Array(n);
    for (let i = 0; i < n; i++) parts[i] = `"k${i}":${i % 10}`;
    return prefix + '{' + parts.join(',') + '}}';
  };
  const spread = (objects) => prefix + '[' + new Array(objects).fill('{"a":0,"b":1,"c":2,"d":3}').join(',') + ']}';
  return [
    ['10k keys in one object', () => object(10_000)],
    ['100k keys in one object', () => object(100_000)],
    ['1M keys in one object', () => object(1_000_000)],
    ['1M keys over 250k objects of 4', () => spread(250_000)],
  ];
}

async function postTimed(port, body) {
  const c = new Conn(port);
  await c.connected;
  const bytes = Buffer.concat([
    Buffer.from(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`),
    Buffer.from(body),
  ]);
  const t = performance.now();
  try {
    const r = await c.request(bytes, 120000);
    const ms = performance.now() - t;
    let message = '';
    try { message = JSON.parse(r.body).error?.message ?? ''; } catch {}
    return { status: r.status, ms, message };
  } catch (e) {
    return { status: 'error', ms: performance.now() - t, message: e.message };
  } finally {
    c.close();
  }
}

async function main() {
  const limit = Math.min(fdLimit(), 1 << 20);
  const SLOW = Number(opt('slow', Math.min(1000, limit - 100)));
  log(`front door bench: ${HEARTH}; ${SLOW} slowloris sockets (open-file limit ${limit})`);
  const srv = await startServer(['--header-timeout', '600', '--max-body', String(64 << 20),
    '--max-connections-per-client', String(SLOW + 64)]);
  const pid = srv.proc.pid;
  const rows = [];
  try {
    await healthLatencies(srv.port, 20);  // warm-up
    await sleep(200);
    const rssIdle = rssBytes(pid);
    const idle = await healthLatencies(srv.port, REQUESTS);
    log('  idle /health done');

    const slow = await slowloris(srv.port, SLOW);
    await sleep(1500);
    const openNow = slow.open();
    const rssSlow = rssBytes(pid);
    const loaded = await healthLatencies(srv.port, REQUESTS);
    const rssSlowAfter = rssBytes(pid);
    const stillOpen = slow.open();
    slow.stop();
    log(`  /health with ${openNow} slowloris sockets open done (${stillOpen} still open at the end)`);

    await sleep(500);
    const ka = await keepAliveRate(srv.port, CLIENTS, SECONDS);
    log('  keep-alive rate done');

    const ms = (xs) => `${quantile(xs, 0.5).toFixed(2)} / ${quantile(xs, 0.99).toFixed(2)} ms`;
    rows.push([`GET /health p50 / p99, idle (${REQUESTS} requests, a fresh connection each)`, ms(idle)]);
    rows.push([`GET /health p50 / p99, ${openNow} slowloris sockets open`, ms(loaded)]);
    rows.push([`RSS idle / with ${openNow} slowloris sockets`, `${MiB(rssIdle)} / ${MiB(Math.max(rssSlow, rssSlowAfter))} MiB`]);
    rows.push([`GET /health over ${CLIENTS} keep-alive connections`, `${Math.round(ka.rate)} req/s${ka.errors ? ` (${ka.errors} not 200)` : ''}`]);

    const bodyRows = [];
    for (const [what, make] of bodies()) {
      const body = make();
      const runs = [];
      for (let i = 0; i < 3; i++) runs.push(await postTimed(srv.port, body));
      const msList = runs.map((r) => r.ms);
      bodyRows.push([what, (Buffer.byteLength(body) / 2 ** 20).toFixed(1) + ' MiB', [...new Set(runs.map((r) => r.status))].join('/'),
        quantile(msList, 0.5).toFixed(1), runs[0].message.slice(0, 70)]);
      log(`  ${what} done`);
    }

    console.log('\n| measure | value |\n|---|---:|');
    for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
    console.log('\n| POST /v1/completions body | size | status | round trip (ms, median of 3) | error message |\n|---|---:|---:|---:|---|');
    for (const r of bodyRows) console.log(`| ${r.join(' | ')} |`);
  } finally {
    srv.proc.kill('SIGTERM');
    const t = setTimeout(() => srv.proc.kill('SIGKILL'), 30000);
    const r = await srv.exited;
    clearTimeout(t);
    if (r.code !== 0) log(`hearth serve exited ${JSON.stringify(r)}:\n${srv.stderr()}`);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
