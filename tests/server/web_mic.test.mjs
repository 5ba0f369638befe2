// The chat page's hold-to-talk microphone in headless chromium, whose fake
// audio device plays jfk.wav in a loop. The button shows only with a Whisper
// model; the capture (16 kHz float32 chunks, one request at a time, nothing
// dropped or reordered) and the page's handling of the session routes are
// checked against intercepted routes, so they do not depend on the server;
// then once end to end against the server's transcription sessions.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, run, HEARTH, getJSON, sleep } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const shared = path.resolve(root, '../shared/audio');
const JFK = path.join(shared, 'jfk.wav');
const RATE = 16000;

// jfk.wav's samples (16-bit mono at 16 kHz, after a 44-byte header) as floats.
function jfkSamples() {
  const b = fs.readFileSync(JFK);
  const out = new Float32Array((b.length - 44) / 2);
  for (let i = 0; i < out.length; i++) out[i] = b.readInt16LE(44 + 2 * i) / 32768;
  return out;
}

function floats(buffers) {
  const b = Buffer.concat(buffers);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

async function until(fn, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn);
    await sleep(20);
  }
}

const rms = (x) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);

// Where each of the page's 300 ms capture chunks sits in jfk.wav, which the
// fake device plays in a loop: for every chunk loud enough to place, its best
// offset in the file and how well it matches there. The page can only lose,
// repeat or reorder whole chunks, which moves a chunk's offset by 300 ms or
// more from where the previous one's end puts it; a glitch of the fake device
// under load moves it by a few ms, so the whole-capture match is not asked.
const CHUNK = 4800;
function jfkPlacement(x) {
  const jfk = jfkSamples(), n = jfk.length;
  const ref = new Float32Array(3 * n);  // the device loops; search the middle copy
  for (let k = 0; k < 3; k++) ref.set(jfk, k * n);
  // Coarse search at 4 kHz (block means), refined at 16 kHz within a few pitch
  // periods of its best (the coarse peak can sit one period off).
  const mean4 = (a) => Float32Array.from({ length: a.length >> 2 }, (_, i) => (a[4 * i] + a[4 * i + 1] + a[4 * i + 2] + a[4 * i + 3]) / 4);
  const ref4 = mean4(ref);
  const corr = (r, c, d) => {
    let dot = 0, rr = 0, cc = 0;
    for (let k = 0; k < c.length; k++) { dot += r[d + k] * c[k]; rr += r[d + k] * r[d + k]; cc += c[k] * c[k]; }
    return dot / Math.sqrt(rr * cc + 1e-12);
  };
  const placed = [];
  for (let i = 0; i + CHUNK <= x.length; i += CHUNK) {
    const c = x.subarray(i, i + CHUNK);
    if (rms(c) < 0.03) continue;  // a pause in the speech: nothing to place
    const c4 = mean4(c);
    let best = -2, at4 = 0;
    for (let d = n >> 2; d < (2 * n) >> 2; d++) {
      const r = corr(ref4, c4, d);
      if (r > best) { best = r; at4 = d; }
    }
    best = -2;
    let at = 0;
    for (let d = 4 * at4 - 200; d <= 4 * at4 + 200; d++) {
      const r = corr(ref, c, d);
      if (r > best) { best = r; at = d; }
    }
    placed.push({ chunk: i / CHUNK, at: at % n, r: +best.toFixed(3) });
  }
  return { placed, n };
}

// Intercepts the session routes; answers finish with `text`. `routes`
// overrides single routes ('create', 'audio', 'finish') with a status and body.
async function fakeSessions(page, { text = ' Hello from the microphone.', routes = {}, audioDelayMs = 0 } = {}) {
  const log = { created: 0, audio: [], finished: 0, deleted: 0, inFlight: 0, maxInFlight: 0, auth: new Set() };
  await page.route('**/v1/audio/sessions**', async (route) => {
    const req = route.request();
    const [, id, action] = new URL(req.url()).pathname.match(/^\/v1\/audio\/sessions(?:\/([^/]+))?(?:\/(\w+))?$/);
    log.auth.add(req.headers().authorization);
    const answer = (kind, json) => routes[kind] ? route.fulfill({ status: routes[kind].status, json: routes[kind].body }) : route.fulfill({ json });
    if (!id) { log.created++; return answer('create', { id: 'sess_1', object: 'audio.session', model: 'whisper-tiny', vocabulary: {} }); }
    assert.equal(id, 'sess_1');
    if (req.method() === 'DELETE') { log.deleted++; return route.fulfill({ status: 204 }); }
    if (action === 'audio') {
      log.audio.push({ body: req.postDataBuffer(), type: req.headers()['content-type'] });
      log.maxInFlight = Math.max(log.maxInFlight, ++log.inFlight);
      // The first answer is slow, so chunks queue up behind it.
      await sleep(log.audio.length === 1 ? audioDelayMs : 0);
      log.inFlight--;
      const samples = log.audio.reduce((s, a) => s + a.body.length / 4, 0);
      return answer('audio', { samples, duration: samples / RATE, speech: [], segments: [] });
    }
    assert.equal(action, 'finish');
    log.finished++;
    await sleep(300);  // long enough to see the transcribing state
    return answer('finish', { text, hearth: {} });
  });
  return log;
}

describe('web page microphone', { skip: !fs.existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (scripts/setup.sh installs chromium)` }, () => {
  let plain, srv, browser, profile, tmp;
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-mic-'));
    const whisper = path.join(tmp, 'whisper-tiny');
    await run(HEARTH, ['mkmodel', '--arch', 'whisper', '--preset', 'tiny', '--out', whisper,
      '--tokenizer', path.join(shared, 'multilingual.tiktoken')]);
    plain = await startServer();
    srv = await startServer(['--whisper-model', whisper, '--whisper-idle-unload', '0']);
    profile = path.join(tmp, 'profile');
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        // Grant the microphone without asking; the fake device plays the file.
        '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
        `--use-file-for-fake-audio-capture=${JFK}`],
    });
  });
  after(async () => {
    await browser?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
    assert.equal((await plain.stop()).code, 0);
    assert.equal((await srv.stop()).code, 0);
  });

  async function open(server, setup = async () => {}) {
    const page = await browser.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(e.message));
    await setup(page);
    await page.goto(server.url + '/');
    await page.waitForFunction(() => document.getElementById('status').textContent.includes('ready'));
    return page;
  }

  const micState = (page) => page.$eval('#mic', (b) => ({ cls: b.className, text: b.textContent, disabled: b.disabled }));
  const idle = (page) => page.waitForFunction(() => document.getElementById('mic').textContent === 'Hold to talk');

  test('without a Whisper model there is no microphone button', async () => {
    assert.equal('transcription' in (await getJSON(plain.url + '/health')).body, false);
    const page = await open(plain);
    assert.equal(await page.isHidden('#mic'), true);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('holding the button streams 16 kHz float32 in order and puts the transcript into the message box', async () => {
    assert.ok((await getJSON(srv.url + '/health')).body.transcription);
    let log;
    const page = await open(srv, async (p) => { log = await fakeSessions(p, { audioDelayMs: 800 }); });
    await page.waitForSelector('#mic', { state: 'visible' });
    await page.fill('#apikey', 'sk-mic');
    await page.fill('#input', 'Note:');
    await page.hover('#mic');
    await page.mouse.down();
    const t0 = Date.now();
    await sleep(500);
    const recording = await micState(page);
    await sleep(2000);
    const held = (Date.now() - t0) / 1000;
    await page.mouse.up();
    await page.waitForFunction(() => document.getElementById('mic').disabled);
    const transcribing = await micState(page);
    await page.waitForFunction(() => document.getElementById('input').value !== 'Note:');
    await idle(page);

    assert.match(recording.cls, /recording/);
    assert.equal(recording.disabled, false);
    assert.match(transcribing.cls, /transcribing/);
    assert.match(transcribing.text, /Transcribing/);
    assert.equal(await page.inputValue('#input'), 'Note: Hello from the microphone.');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'input');
    assert.equal(await page.locator('.msg').count(), 0, 'nothing sent, no error');
    assert.equal(log.created, 1);
    assert.equal(log.finished, 1);
    assert.equal(log.deleted, 0);
    assert.deepEqual([...log.auth], ['Bearer sk-mic']);
    assert.equal(log.maxInFlight, 1, 'one /audio request at a time');
    assert.ok(log.audio.length >= 3, `${log.audio.length} chunks`);
    for (const a of log.audio) {
      assert.equal(a.type, 'audio/pcm;rate=16000');
      assert.equal(a.body.length % 4, 0);
    }
    const x = floats(log.audio.map((a) => a.body));
    const seconds = x.length / RATE;
    assert.ok(seconds > held - 1 && seconds < held + 0.2, `captured ${seconds} s of a ${held} s hold`);
    assert.ok(rms(x) > 0.05, `rms ${rms(x)}`);
    const { placed, n } = jfkPlacement(x);
    const where = JSON.stringify(placed);
    assert.ok(placed.length >= 3, `chunks placed in jfk.wav: ${where}`);
    // One chunk may hold a glitch of the fake device; a wrong format or rate fails them all.
    assert.ok(placed.filter((p) => p.r < 0.9).length <= 1, `the chunks match jfk.wav where they are placed: ${where}`);
    for (let k = 1; k < placed.length; k++) {
      const expected = (placed[k - 1].at + (placed[k].chunk - placed[k - 1].chunk) * CHUNK) % n;
      const off = ((placed[k].at - expected) % n + n + n / 2) % n - n / 2;  // circular, in (-n/2, n/2]
      assert.ok(Math.abs(off) < 0.1 * RATE, `chunk ${placed[k].chunk} is ${off} samples from where the previous one ends: ${where}`);
    }
    assert.deepEqual(page.errors, []);
    await page.evaluate(() => localStorage.clear());  // the API key stays out of the next tests
    await page.close();
  });

  test('the keyboard holds too, Escape cancels, and failures show in the chat', async () => {
    let log;
    const routes = {};
    const page = await open(srv, async (p) => { log = await fakeSessions(p, { text: ' typed by voice', routes }); });
    await page.fill('#input', 'hello world');
    await page.$eval('#input', (el) => el.setSelectionRange(5, 5));  // the cursor after "hello"

    // Space held on the focused button; the text goes in at the cursor.
    await page.focus('#mic');
    await page.keyboard.down(' ');
    await sleep(800);
    await page.keyboard.up(' ');
    await page.waitForFunction(() => document.getElementById('input').value !== 'hello world');
    await idle(page);
    assert.equal(await page.inputValue('#input'), 'hello typed by voice world');
    assert.ok(log.audio.length >= 1);
    assert.equal(log.finished, 1);

    // Enter held, then Escape: the session is deleted, nothing goes in.
    await page.focus('#mic');
    await page.keyboard.down('Enter');
    await page.waitForFunction(() => document.getElementById('mic').className.includes('recording'));
    await sleep(500);
    await page.keyboard.press('Escape');
    await page.keyboard.up('Enter');
    await idle(page);
    await until(() => log.deleted === 1);
    assert.equal(log.finished, 1);
    assert.equal(await page.inputValue('#input'), 'hello typed by voice world');
    assert.equal(await page.locator('.msg').count(), 0);

    // A failing chunk ends the recording with an error, and the session is deleted.
    routes.audio = { status: 404, body: { error: { message: 'no such audio session', type: 'invalid_request_error', code: 'session_not_found' } } };
    await page.hover('#mic');
    await page.mouse.down();
    await page.waitForSelector('.msg.error');
    await page.mouse.up();
    await idle(page);
    assert.equal(await page.textContent('.msg.error'), 'Microphone: no such audio session');
    await until(() => log.deleted === 2);

    // The server refuses a new session.
    routes.create = { status: 429, body: { error: { message: 'too many open audio sessions', type: 'rate_limit_error', code: null } } };
    await page.hover('#mic');
    await page.mouse.down();
    await page.waitForFunction(() => document.querySelectorAll('.msg.error').length === 2);
    await page.mouse.up();
    await idle(page);
    assert.equal(await page.locator('.msg.error').nth(1).textContent(), 'Microphone: too many open audio sessions');
    assert.equal(log.created, 4);
    assert.equal(log.deleted, 2);
    assert.equal(log.finished, 1);
    assert.equal(await page.inputValue('#input'), 'hello typed by voice world');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('a denied microphone shows in the chat and opens no session', async () => {
    let log;
    const page = await open(srv, async (p) => {
      log = await fakeSessions(p);
      await p.addInitScript(() => {
        navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
      });
    });
    await page.hover('#mic');
    await page.mouse.down();
    await page.waitForSelector('.msg.error');
    await page.mouse.up();
    await idle(page);
    assert.equal(await page.textContent('.msg.error'), 'Microphone: microphone permission denied');
    assert.equal(log.created, 0);
    await page.close();
  });

  test('end to end: the server session\'s transcript lands in the message box', async () => {
    const page = await open(srv);
    const statuses = [];
    let finish = null;
    page.on('response', (r) => {
      if (!r.url().includes('/v1/audio/sessions')) return;
      statuses.push(r.status());
      if (r.url().endsWith('/finish')) finish = r;
    });
    await page.hover('#mic');
    await page.mouse.down();
    await sleep(2000);
    await page.mouse.up();
    await page.waitForFunction(() => document.getElementById('mic').textContent === 'Hold to talk', null, { timeout: 60000 });
    assert.deepEqual(await page.locator('.msg.error').allTextContents(), []);
    assert.ok(finish, 'finish was called');
    assert.equal(finish.status(), 200);
    const body = await finish.json();
    assert.equal(typeof body.text, 'string');
    // The page trims the transcript (Whisper's starts with a space).
    assert.equal(await page.inputValue('#input'), body.text.trim());
    assert.ok(statuses.length >= 3, `session requests: ${statuses}`);
    assert.ok(statuses.every((s) => s === 200), `session requests: ${statuses}`);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});
