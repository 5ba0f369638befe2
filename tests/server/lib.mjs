// Shared helpers for the server end-to-end tests: start `hearth serve` on a
// free loopback port, talk to it, stop it.
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import net from 'node:net';
import OpenAI from 'openai';

export const HEARTH = process.env.HEARTH_BIN;
if (!HEARTH) throw new Error('set HEARTH_BIN to the hearth binary (tests/server/run.sh does)');

export const run = promisify(execFile);

// Starts `hearth serve --port 0 ...` and resolves once it prints its address.
export async function startServer(args = [], { env = {} } = {}) {
  const proc = spawn(HEARTH, ['serve', '--host', '127.0.0.1', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '', stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('hearth serve did not start in 60 s: ' + stderr)), 60000);
    proc.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then(({ code }) => { clearTimeout(timer); reject(new Error(`hearth serve exited (${code}): ${stderr}`)); });
  });
  const port = Number(new URL(url).port);
  return {
    proc, url, port, exited,
    stdout: () => stdout,
    stderr: () => stderr,
    client: (opts = {}) => new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000, ...opts }),
    async stop(signal = 'SIGTERM', timeoutMs = 30000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

export async function getJSON(url, init = {}) {
  const r = await fetch(url, init);
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: r.status, headers: r.headers, body };
}

export async function postRaw(url, body, headers = { 'Content-Type': 'application/json' }) {
  return getJSON(url, { method: 'POST', headers, body });
}

// Sends raw bytes over TCP and returns what came back (until close or timeout).
export function rawRequest(port, bytes, { timeoutMs = 5000, halfClose = true } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const done = () => { sock.destroy(); resolve(data.toString('latin1')); };
    const timer = setTimeout(done, timeoutMs);
    sock.on('connect', () => { sock.write(bytes); if (halfClose) sock.end(); });
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('close', () => { clearTimeout(timer); done(); });
    sock.on('error', () => { clearTimeout(timer); done(); });
  });
}

export function expectErrorShape(assert, body, status, res) {
  assert.equal(typeof body, 'object', `error body is JSON (status ${status})`);
  assert.ok(body.error, 'has error');
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in body.error, `error has ${k}`);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
}

export async function stats(srv, headers = {}) {
  return (await getJSON(srv.url + '/stats', { headers })).body;
}

// Polls /stats until fn(stats) is true or the time is up; returns the last stats.
export async function waitForStats(srv, fn, timeoutMs = 10000, headers = {}) {
  const end = Date.now() + timeoutMs;
  let s;
  for (;;) {
    s = await stats(srv, headers);
    if (fn(s) || Date.now() > end) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A WAV of `data`: 16-bit PCM, or 32-bit float with `float`; 16 kHz mono unless told.
export function wav(data, { rate = 16000, channels = 1, float = false } = {}) {
  const bytesPerSample = float ? 4 : 2;
  const head = Buffer.alloc(44);
  head.write('RIFF', 0); head.writeUInt32LE(36 + data.length, 4); head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16); head.writeUInt16LE(float ? 3 : 1, 20); head.writeUInt16LE(channels, 22);
  head.writeUInt32LE(rate, 24); head.writeUInt32LE(rate * channels * bytesPerSample, 28);
  head.writeUInt16LE(channels * bytesPerSample, 32); head.writeUInt16LE(8 * bytesPerSample, 34);
  head.write('data', 36); head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

// No request holds KV any more: every block is free or held only by the
// prompt cache (which keeps finished requests' blocks for reuse).
export function kvReturned(s) {
  const m = s.memory;
  return m.kv_sequences === 0 && m.kv_blocks_free + m.kv_blocks_cached === m.kv_blocks_total;
}
