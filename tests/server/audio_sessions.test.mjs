// Dictation sessions end to end: /v1/audio/sessions takes audio in parts
// (raw float32 at 16 kHz, or files), transcribes each 30 s window as soon as
// it is complete, and its finish answers exactly what a one-shot
// /v1/audio/transcriptions answers for the same audio and options. Also the
// vocabulary hints, the limits (open sessions, audio per session, idle
// expiry) and every error path. The model is a random-weight Whisper tiny:
// the text is noise, and equality with the one-shot answer is what counts.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, run, HEARTH, postRaw, getJSON, expectErrorShape, sleep, wav } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const shared = path.resolve(root, '../shared/audio');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-sessions-'));
const whisper = path.join(tmp, 'whisper-tiny');
const PCM = { 'Content-Type': 'audio/pcm;rate=16000' };
const JSON_TYPE = { 'Content-Type': 'application/json' };
// One temperature, no fallback ladder: a random model would climb all six.
const OPTIONS = { language: 'en', temperature: 0.2 };

// jfk.wav's 16-bit samples as floats, the way hearth's WAV reader reads them.
function jfkFloats() {
  const file = fs.readFileSync(path.join(shared, 'jfk.wav'));
  const data = file.indexOf('data') + 8;
  const n = (file.length - data) >> 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = file.readInt16LE(data + 2 * i) / 32768;
  return out;
}

const bytes = (f32) => Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);

// `seconds` of 16-bit silence at `rate` in `channels`: few seconds, many input samples.
const wideWav = (seconds, rate, channels) => wav(Buffer.alloc(Math.round(seconds * rate) * channels * 2), { rate, channels });
const floatWav = (samples) => wav(bytes(samples), { float: true });

// The first `seconds` of jfk.wav (16-bit mono 16 kHz) as a WAV of its own.
function jfkWavHead(seconds) {
  const file = fs.readFileSync(path.join(shared, 'jfk.wav'));
  const head = file.indexOf('data') + 8;
  const out = Buffer.from(file.subarray(0, head + seconds * 32000));
  out.writeUInt32LE(seconds * 32000, head - 4);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

before(async () => {
  await run(HEARTH, ['mkmodel', '--arch', 'whisper', '--preset', 'tiny', '--out', whisper,
    '--tokenizer', path.join(shared, 'multilingual.tiktoken')]);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('audio sessions', () => {
  let srv;
  const jfk = jfkFloats();
  // 44 s: one window is complete while the audio still arrives.
  const long = new Float32Array(jfk.length * 4);
  for (let i = 0; i < 4; i++) long.set(jfk, i * jfk.length);

  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--whisper-idle-unload', '0']);
  });
  after(async () => { await srv.stop(); });

  const open = async (params = OPTIONS) => postRaw(srv.url + '/v1/audio/sessions', JSON.stringify(params));
  const append = async (id, body, headers = PCM) => postRaw(`${srv.url}/v1/audio/sessions/${id}/audio`, body, headers);
  const finish = async (id) => postRaw(`${srv.url}/v1/audio/sessions/${id}/finish`, '', {});
  const oneShot = async (file, params) => {
    const form = new FormData();
    form.append('file', new Blob([file]), 'clip.wav');
    for (const [k, v] of Object.entries(params)) {
      for (const item of Array.isArray(v) ? v : [v]) form.append(Array.isArray(v) ? `${k}[]` : k, String(item));
    }
    return getJSON(srv.url + '/v1/audio/transcriptions', { method: 'POST', body: form });
  };
  const withoutHearth = (body) => { const { hearth, ...rest } = body; return rest; };

  test('parts of half a second: windows transcribed on the way, finish = one-shot', async () => {
    const params = { ...OPTIONS, response_format: 'verbose_json' };
    const created = await open(params);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.match(created.body.id, /^sess_/);
    assert.equal(created.body.object, 'audio.session');
    assert.equal(created.body.model, 'whisper-tiny');
    const id = created.body.id;
    let last;
    const part = 8000;
    for (let at = 0; at < long.length; at += part) {
      last = await append(id, bytes(long.subarray(at, Math.min(long.length, at + part))));
      assert.equal(last.status, 200, JSON.stringify(last.body));
    }
    assert.equal(last.body.samples, long.length);
    assert.ok(Math.abs(last.body.duration - long.length / 16000) < 1e-6);
    assert.ok(last.body.windows >= 1, `a complete window was transcribed before the end: ${JSON.stringify(last.body)}`);
    assert.ok(last.body.segments.length >= 1, 'segments so far');
    assert.equal(last.body.speech, null, 'no VAD asked');

    const health = await getJSON(srv.url + '/health');
    assert.equal(health.body.transcription.audio_sessions, 1);

    const done = await finish(id);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.ok(done.body.hearth.session.windows.early >= 1);
    assert.equal(done.body.hearth.session.windows.redone, 0, 'same loudness throughout');
    const whole = await oneShot(floatWav(long), params);
    assert.equal(whole.status, 200);
    assert.deepEqual(withoutHearth(done.body), withoutHearth(whole.body));
    // The segments reported on the way are the final ones.
    for (const s of last.body.segments) assert.equal(s.text, done.body.segments[s.id].text);

    assert.equal((await getJSON(srv.url + '/health')).body.transcription.audio_sessions, 0);
    const again = await finish(id);
    assert.equal(again.status, 409);
    expectErrorShape(assert, again.body, 409);
    assert.equal(again.body.error.code, 'session_finished');
    assert.equal((await append(id, bytes(jfk.subarray(0, 1600)))).status, 409);
    const del = await fetch(`${srv.url}/v1/audio/sessions/${id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.equal((await finish(id)).status, 404);
  });

  test('a client that leaves during finish ends the session; the server lives', async () => {
    const { body } = await open();
    await append(body.id, bytes(long));
    const abort = new AbortController();
    const leaving = fetch(`${srv.url}/v1/audio/sessions/${body.id}/finish`, { method: 'POST', signal: abort.signal });
    await sleep(300);
    abort.abort();
    await assert.rejects(leaving);
    // The finish stops between windows; from then on the session is finished.
    let r;
    for (let i = 0; i < 200; i++) {
      r = await append(body.id, bytes(jfk.subarray(0, 1600)));
      if (r.status !== 200) break;
      await sleep(100);
    }
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal((await getJSON(srv.url + '/health')).status, 200);
    assert.equal((await fetch(`${srv.url}/v1/audio/sessions/${body.id}`, { method: 'DELETE' })).status, 204);
  });

  test('a file as a part (mp3), text format: the one-shot answer', async () => {
    const { body } = await open({ ...OPTIONS, response_format: 'text' });
    const mp3 = fs.readFileSync(path.join(shared, 'jfk.mp3'));
    const r = await append(body.id, mp3, { 'Content-Type': 'audio/mpeg' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(Math.abs(r.body.duration - 11) < 0.2);
    const done = await fetch(`${srv.url}/v1/audio/sessions/${body.id}/finish`, { method: 'POST' });
    assert.equal(done.status, 200);
    assert.match(done.headers.get('content-type'), /^text\/plain/);
    const form = new FormData();
    form.append('file', new Blob([mp3]), 'jfk.mp3');
    for (const [k, v] of Object.entries({ ...OPTIONS, response_format: 'text' })) form.append(k, String(v));
    const whole = await fetch(srv.url + '/v1/audio/transcriptions', { method: 'POST', body: form });
    assert.equal(await done.text(), await whole.text());
  });

  test('vocabulary: usage reported at creation and in the answer, same as one-shot', async () => {
    const vocabulary = ['Kubernetes', 'hearth', 'Whisper'];
    const created = await open({ ...OPTIONS, vocabulary, prompt: 'Meeting notes.' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const v = created.body.vocabulary;
    assert.equal(v.terms, 3);
    assert.equal(v.used, 3);
    assert.deepEqual(v.dropped, []);
    assert.ok(v.prompt_tokens > 3);
    await append(created.body.id, bytes(jfk));
    const done = await finish(created.body.id);
    assert.equal(done.status, 200);
    assert.deepEqual(done.body.hearth.vocabulary, v);
    const whole = await oneShot(floatWav(jfk), { ...OPTIONS, vocabulary, prompt: 'Meeting notes.' });
    assert.equal(whole.status, 200, JSON.stringify(whole.body));
    assert.equal(done.body.text, whole.body.text);
    assert.deepEqual(whole.body.hearth.vocabulary, v);

    const many = Array.from({ length: 300 }, (_, i) => `term${i}`);
    const big = await open({ ...OPTIONS, vocabulary: many });
    assert.equal(big.status, 200);
    assert.ok(big.body.vocabulary.used > 0 && big.body.vocabulary.used < 300);
    assert.deepEqual(big.body.vocabulary.dropped, many.slice(big.body.vocabulary.used));
    assert.ok(big.body.vocabulary.prompt_tokens <= 223);
    await fetch(`${srv.url}/v1/audio/sessions/${big.body.id}`, { method: 'DELETE' });
  });

  test('bad requests: clear errors in OpenAI shape', async () => {
    const cases = [
      [await postRaw(srv.url + '/v1/audio/sessions', '{nope'), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ file: 'AAAA' })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ vad_trim: true, vad: true })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ stream: true })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ vocabulary: 'x' })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ vocabulary: [''] })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ beam_size: 17 })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ task: 'dance' })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ language: 'klingon' })), 400],
      [await postRaw(srv.url + '/v1/audio/sessions', 'x=1', { 'Content-Type': 'text/plain' }), 415],
      [await append('sess_unknown', bytes(jfk.subarray(0, 16))), 404],
      [await finish('sess_unknown'), 404],
    ];
    for (const [r, status] of cases) {
      assert.equal(r.status, status, JSON.stringify(r.body));
      expectErrorShape(assert, r.body, status);
    }
    const del = await getJSON(`${srv.url}/v1/audio/sessions/sess_unknown`, { method: 'DELETE' });
    assert.equal(del.status, 404);

    const { body } = await open();
    const id = body.id;
    const nan = new Float32Array([0.1, NaN, 0.2]);
    for (const [r, status] of [
      [await append(id, Buffer.alloc(6)), 400],                                  // not whole samples
      [await append(id, bytes(nan)), 400],                                       // not finite
      [await append(id, Buffer.alloc(8), { 'Content-Type': 'audio/pcm;rate=8000' }), 400],
      [await append(id, Buffer.alloc(8), { 'Content-Type': 'audio/pcm' }), 400],
      [await append(id, Buffer.from('not audio at all'), { 'Content-Type': 'audio/wav' }), 400],
      [await append(id, Buffer.alloc(8), { 'Content-Type': 'text/plain' }), 415],
      [await finish(id), 400],                                                   // no audio yet
    ]) {
      assert.equal(r.status, status, JSON.stringify(r.body));
      expectErrorShape(assert, r.body, status);
    }
    // A bad part changes nothing; an empty one is answered with where the session is.
    const empty = await append(id, Buffer.alloc(0));
    assert.equal(empty.status, 200);
    assert.equal(empty.body.samples, 0);
    const ok = await append(id, bytes(jfk.subarray(0, 16000)));
    assert.equal(ok.body.samples, 16000);
    assert.equal((await fetch(`${srv.url}/v1/audio/sessions/${id}`, { method: 'DELETE' })).status, 204);
  });
});

describe('audio session limits', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--max-audio-sessions', '2',
      '--audio-session-max-seconds', '1', '--audio-session-idle', '2', '--max-audio-bytes', '100000']);
  });
  after(async () => { await srv.stop(); });
  const open = async () => postRaw(srv.url + '/v1/audio/sessions', '', {});

  test('at most N open (429), audio per session and per part (413), idle sessions forgotten (404)', async () => {
    const a = await open(), b = await open();
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const c = await open();
    assert.equal(c.status, 429);
    expectErrorShape(assert, c.body, 429);
    assert.equal(c.body.error.code, 'too_many_sessions');

    const over = await postRaw(`${srv.url}/v1/audio/sessions/${a.body.id}/audio`,
      Buffer.alloc(4 * 16001), PCM);
    assert.equal(over.status, 413);
    expectErrorShape(assert, over.body, 413);
    // A part past --max-audio-bytes is refused, however little audio it holds:
    // a WAV of 0.1 s behind 100 kB of a chunk readers skip.
    const junk = Buffer.alloc(8 + 100000);
    junk.write('JUNK', 0);
    junk.writeUInt32LE(100000, 4);
    const fmt = Buffer.alloc(24);
    fmt.write('fmt ', 0);
    fmt.writeUInt32LE(16, 4); fmt.writeUInt16LE(1, 8); fmt.writeUInt16LE(1, 10);
    fmt.writeUInt32LE(16000, 12); fmt.writeUInt32LE(32000, 16); fmt.writeUInt16LE(2, 20); fmt.writeUInt16LE(16, 22);
    const data = Buffer.alloc(8 + 3200);
    data.write('data', 0);
    data.writeUInt32LE(3200, 4);
    const body = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVE'), fmt, junk, data]);
    body.writeUInt32LE(body.length - 8, 4);
    const big = await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, body, { 'Content-Type': 'audio/wav' });
    assert.equal(big.status, 413, JSON.stringify(big.body));
    assert.match(big.body.error.message, /--max-audio-bytes/);
    // A WAV of 3 s where the session has room for 1: refused from its
    // header, the same 413 as whole samples past the room.
    const long = jfkWavHead(3);
    const tooLong = await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, long, { 'Content-Type': 'audio/wav' });
    assert.equal(tooLong.status, 413, JSON.stringify(tooLong.body));
    assert.equal(tooLong.body.error.code, 'request_too_large');
    assert.match(tooLong.body.error.message, /at most 1 s of audio \(--audio-session-max-seconds\)/);
    const after = await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, Buffer.alloc(0), PCM);
    assert.equal(after.body.samples, 0, 'the refused parts changed nothing');

    // Forgotten by the server's own sweep (every idle/4), not only when a
    // request looks: their memory goes back on a quiet server too.
    let open_sessions;
    for (const deadline = Date.now() + 10000; Date.now() < deadline; await sleep(100)) {
      open_sessions = (await getJSON(srv.url + '/health')).body.transcription.audio_sessions;
      if (open_sessions === 0) break;
    }
    assert.equal(open_sessions, 0);
    const gone = await postRaw(`${srv.url}/v1/audio/sessions/${a.body.id}/audio`, Buffer.alloc(4), PCM);
    assert.equal(gone.status, 404);
    assert.equal((await open()).status, 200, 'forgotten sessions free their places');
  });
});

describe('audio session parts and --max-audio-seconds', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--max-audio-seconds', '1', '--audio-session-max-seconds', '100']);
  });
  after(async () => { await srv.stop(); });

  test('a part holds no more audio than one upload may (413), however much room the session has', async () => {
    const s = await postRaw(srv.url + '/v1/audio/sessions', '', {});
    assert.equal(s.status, 200);
    const pcm = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, Buffer.alloc(4 * 24000), PCM);
    assert.equal(pcm.status, 413);
    expectErrorShape(assert, pcm.body, 413);
    assert.match(pcm.body.error.message, /at most 1 s of audio \(--max-audio-seconds\)/);
    const long = jfkWavHead(3);
    const decoded = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, long, { 'Content-Type': 'audio/wav' });
    assert.equal(decoded.status, 413, JSON.stringify(decoded.body));
    assert.match(decoded.body.error.message, /--max-audio-seconds/);
    // 0.2 s, but 96 kHz in 64 channels: more input samples than 1 s allows (48 per output sample).
    const wide = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, wideWav(0.2, 96000, 64),
      { 'Content-Type': 'audio/wav' });
    assert.equal(wide.status, 413, JSON.stringify(wide.body));
    assert.match(wide.body.error.message, /samples across its channels.*\(--max-audio-seconds\)$/);
    const ok = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, Buffer.alloc(4 * 8000), PCM);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.samples, 8000);
  });
});

describe('audio session parts and --audio-session-max-seconds', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--audio-session-max-seconds', '1']);
  });
  after(async () => { await srv.stop(); });

  test('where the session has less room than one upload may hold, its flag sets the input-sample limit (413)', async () => {
    const s = await postRaw(srv.url + '/v1/audio/sessions', '', {});
    assert.equal(s.status, 200);
    // 0.3 s at 96 kHz in 64 channels: past 48 input samples per output sample of the room.
    const wide = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, wideWav(0.3, 96000, 64),
      { 'Content-Type': 'audio/wav' });
    assert.equal(wide.status, 413, JSON.stringify(wide.body));
    expectErrorShape(assert, wide.body, 413);
    assert.equal(wide.body.error.code, 'request_too_large');
    assert.match(wide.body.error.message, /samples across its channels.*\(--audio-session-max-seconds\)$/);
  });
});

describe('decoded audio the server holds (--max-audio-held)', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--max-audio-held', '3',
      '--max-audio-sessions', '4', '--max-audio-sessions-per-client', '2']);
  });
  after(async () => { await srv.stop(); });
  const open = async () => postRaw(srv.url + '/v1/audio/sessions', '', {});
  const oneShot = async (file) => {
    const form = new FormData();
    form.append('file', new Blob([file]), 'clip.wav');
    form.append('language', 'en');
    form.append('temperature', '0.2');
    return getJSON(srv.url + '/v1/audio/transcriptions', { method: 'POST', body: form });
  };
  const held = async () => (await getJSON(srv.url + '/health')).body.transcription.audio_held_seconds;
  const expectFull = (r) => {
    assert.equal(r.status, 429, JSON.stringify(r.body));
    expectErrorShape(assert, r.body, 429);
    assert.equal(r.body.error.code, 'audio_memory_full');
    assert.match(r.body.error.message, /--max-audio-held/);
  };

  test('sessions and one-shot requests share it: 429 while others hold it, 413 past all of it; one client opens at most N sessions', async () => {
    const a = await open(), b = await open();
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const third = await open();
    assert.equal(third.status, 429);
    assert.equal(third.body.error.code, 'too_many_sessions');
    assert.match(third.body.error.message, /--max-audio-sessions-per-client/);

    const part = await postRaw(`${srv.url}/v1/audio/sessions/${a.body.id}/audio`, Buffer.alloc(4 * 32000), PCM);
    assert.equal(part.status, 200, JSON.stringify(part.body));
    assert.equal(await held(), 2);
    // With what the session holds, past the whole budget: never fits, 413.
    const more = await postRaw(`${srv.url}/v1/audio/sessions/${a.body.id}/audio`, Buffer.alloc(4 * 32000), PCM);
    assert.equal(more.status, 413, JSON.stringify(more.body));
    assert.match(more.body.error.message, /--max-audio-held/);
    // One second of room left: a 2 s upload, a 2 s raw part and a 2 s WAV part wait.
    expectFull(await oneShot(jfkWavHead(2)));
    expectFull(await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, Buffer.alloc(4 * 32000), PCM));
    expectFull(await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, jfkWavHead(2), { 'Content-Type': 'audio/wav' }));
    assert.equal(await held(), 2, 'refused audio holds nothing');

    // Finishing gives the session's audio back, and so does a finished upload.
    assert.equal((await postRaw(`${srv.url}/v1/audio/sessions/${a.body.id}/finish`, '', {})).status, 200);
    assert.equal(await held(), 0);
    const ok = await oneShot(jfkWavHead(2));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(await held(), 0);
    // Longer than the whole budget: never fits, so 413 rather than "retry".
    const never = await oneShot(jfkWavHead(4));
    assert.equal(never.status, 413, JSON.stringify(never.body));
    assert.equal(never.body.error.param, 'file');
    assert.match(never.body.error.message, /--max-audio-held/);
    // A deleted session gives its audio back too.
    assert.equal((await postRaw(`${srv.url}/v1/audio/sessions/${b.body.id}/audio`, Buffer.alloc(4 * 16000), PCM)).status, 200);
    assert.equal(await held(), 1);
    assert.equal((await fetch(`${srv.url}/v1/audio/sessions/${b.body.id}`, { method: 'DELETE' })).status, 204);
    assert.equal(await held(), 0);
  });
});

describe('audio sessions without a Whisper model', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv.stop(); });

  test('503 model_unavailable', async () => {
    const r = await postRaw(srv.url + '/v1/audio/sessions', '{}');
    assert.equal(r.status, 503);
    expectErrorShape(assert, r.body, 503);
    assert.equal(r.body.error.code, 'model_unavailable');
  });
});
