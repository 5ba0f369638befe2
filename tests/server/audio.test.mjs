// Speech to text end to end: /v1/audio/transcriptions and /translations
// through the official `openai` client (multipart, as the SDK sends it), JSON
// bodies with base64 audio, raw audio bodies, every response format, SSE
// streaming, the Whisper model's lifecycle (/health, /stats, unload), the
// transcription queue's bound, and the error paths. The model is a
// random-weight Whisper tiny written by `hearth mkmodel` (its numerics are
// checked against NumPy by tests/numerics), so the
// text is noise: here the protocol is under test, and the server's answer
// must equal `hearth transcribe` on the same file and options.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { toFile } from 'openai';
import { startServer, run, HEARTH, postRaw, getJSON, expectErrorShape, wav } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const shared = path.resolve(root, '../shared/audio');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-audio-'));
const whisper = path.join(tmp, 'whisper-tiny');
const jfkWav = fs.readFileSync(path.join(shared, 'jfk.wav'));
const jfkMp3 = fs.readFileSync(path.join(shared, 'jfk.mp3'));
// One temperature, no fallback ladder: a random model would climb all six.
const FAST = { temperature: 0.2 };

before(async () => {
  await run(HEARTH, ['mkmodel', '--arch', 'whisper', '--preset', 'tiny', '--out', whisper,
    '--tokenizer', path.join(shared, 'multilingual.tiktoken')]);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function multipart(url, fields, file = jfkWav, filename = 'jfk.wav') {
  const form = new FormData();
  if (file) form.append('file', new Blob([file]), filename);
  for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
  const r = await fetch(url, { method: 'POST', body: form });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

describe('audio routes with a Whisper model', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--whisper-idle-unload', '0']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  test('transcriptions.create (json): text, and the same text as `hearth transcribe`', async () => {
    const r = await client.audio.transcriptions.create({
      file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', language: 'en', ...FAST,
    });
    assert.equal(typeof r.text, 'string');
    assert.equal(r.hearth.model, 'whisper-tiny');
    assert.equal(r.hearth.language, 'en');
    assert.ok(Math.abs(r.hearth.duration - 11.0) < 0.1, `duration ${r.hearth.duration}`);
    for (const k of ['decode_ms', 'transcribe_ms', 'total_ms']) assert.ok(r.hearth.timings[k] >= 0, k);
    const { stdout } = await run(HEARTH, ['transcribe', path.join(shared, 'jfk.wav'), '--model', whisper,
      '--language', 'en', '--temperature', '0.2', '--format', 'json']);
    assert.equal(r.text, JSON.parse(stdout).text);
  });

  test('every response format, with its content type', async () => {
    const url = srv.url + '/v1/audio/transcriptions';
    const text = await multipart(url, { response_format: 'text', language: 'en', ...FAST });
    assert.equal(text.status, 200);
    assert.match(text.type, /^text\/plain/);
    const srt = await multipart(url, { response_format: 'srt', language: 'en', ...FAST });
    assert.match(srt.type, /subrip/);
    assert.match(srt.text, /^(1\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d\n[^\n]*\n\n)?/);
    const vtt = await multipart(url, { response_format: 'vtt', language: 'en', ...FAST });
    assert.match(vtt.type, /^text\/vtt/);
    assert.ok(vtt.text.startsWith('WEBVTT\n\n'));
    const verbose = await client.audio.transcriptions.create({
      file: await toFile(jfkMp3, 'jfk.mp3'), model: 'whisper-1', response_format: 'verbose_json', language: 'en', ...FAST,
    });
    assert.equal(verbose.task, 'transcribe');
    assert.equal(verbose.language, 'en');
    assert.ok(Math.abs(verbose.duration - 11.0) < 0.2, `mp3 duration ${verbose.duration}`);
    assert.ok(Array.isArray(verbose.segments));
    for (const s of verbose.segments) {
      for (const k of ['id', 'seek', 'start', 'end', 'text', 'tokens', 'temperature', 'avg_logprob',
        'compression_ratio', 'no_speech_prob']) assert.ok(k in s, `segment has ${k}`);
      assert.ok(s.end >= s.start && s.start >= 0 && s.end <= 30.0001, `segment ${s.start}..${s.end}`);
    }
    assert.equal(text.text, verbose.text + '\n', 'text is the json text plus a newline');
  });

  test('timestamp_granularities word: words per segment and for the clip', async () => {
    const r = await client.audio.transcriptions.create({
      file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'], language: 'en', ...FAST,
    });
    assert.ok(Array.isArray(r.words), 'top-level words');
    const perSegment = [];
    for (const s of r.segments) {
      assert.ok(Array.isArray(s.words), `segment ${s.id} has words`);
      let previous = -Infinity;
      for (const w of s.words) {
        assert.equal(typeof w.word, 'string');
        assert.ok(w.start <= w.end && w.start >= previous, `word ${JSON.stringify(w)} after ${previous}`);
        // openai-whisper may stretch the first and last word by up to the median word (<= 0.7 s).
        assert.ok(w.start >= s.start - 0.7 && w.end <= s.end + 0.7, `word ${JSON.stringify(w)} in ${s.start}..${s.end}`);
        previous = w.start;
        perSegment.push({ word: w.word.trimStart(), start: w.start, end: w.end });
      }
    }
    assert.deepEqual(r.words, perSegment);
    const plain = await client.audio.transcriptions.create({
      file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', response_format: 'verbose_json', language: 'en', ...FAST,
    });
    assert.ok(!('words' in plain), 'no words unless asked');
  });

  test('translations.create: task translate', async () => {
    const r = await client.audio.translations.create({
      file: await toFile(jfkWav, 'jfk.wav'), model: 'whisper-1', response_format: 'verbose_json', ...FAST,
    });
    assert.equal(r.task, 'translate');
  });

  test('JSON bodies: base64, a data: URL, input_audio.data; a raw audio/wav body with the fields in the query', async () => {
    const url = srv.url + '/v1/audio/transcriptions';
    const b64 = jfkWav.toString('base64');
    const plain = await postRaw(url, JSON.stringify({ file: b64, language: 'en', ...FAST }));
    assert.equal(plain.status, 200, JSON.stringify(plain.body));
    const dataUrl = await postRaw(url, JSON.stringify({ file: 'data:audio/wav;base64,' + b64, language: 'en', ...FAST }));
    const input = await postRaw(url, JSON.stringify({ input_audio: { data: b64 }, language: 'en', ...FAST }));
    assert.equal(dataUrl.body.text, plain.body.text);
    assert.equal(input.body.text, plain.body.text);
    const raw = await postRaw(url + '?language=en&temperature=0.2', jfkWav, { 'Content-Type': 'audio/wav' });
    assert.equal(raw.status, 200);
    assert.equal(raw.body.text, plain.body.text);
    // The list fields repeat in a query string as in a form.
    const words = await postRaw(url + '?language=en&response_format=verbose_json&timestamp_granularities%5B%5D=word&timestamp_granularities[]=segment',
      jfkWav, { 'Content-Type': 'audio/wav' });
    assert.equal(words.status, 200, JSON.stringify(words.body));
    assert.ok(Array.isArray(words.body.words) && words.body.words.length > 0, 'words from the query string');
    const bad = await postRaw(url + '?timestamp_granularities[]=minute', jfkWav, { 'Content-Type': 'audio/wav' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'timestamp_granularities[]');
  });

  test('stream: a delta per segment, progress, then the whole body and [DONE]', async () => {
    const form = new FormData();
    form.append('file', new Blob([jfkWav]), 'jfk.wav');
    for (const [k, v] of Object.entries({ stream: 'true', language: 'en', response_format: 'verbose_json', ...FAST }))
      form.append(k, String(v));
    const r = await fetch(srv.url + '/v1/audio/transcriptions', { method: 'POST', body: form });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const events = (await r.text()).split('\n\n').filter(Boolean).map((e) => e.replace(/^data: /, ''));
    assert.equal(events.at(-1), '[DONE]');
    const parsed = events.slice(0, -1).map((e) => JSON.parse(e));
    const done = parsed.at(-1);
    assert.equal(done.type, 'transcript.text.done');
    const deltas = parsed.filter((e) => e.type === 'transcript.text.delta');
    assert.equal(deltas.length, done.response.segments.length);
    assert.equal(deltas.map((d) => d.delta).join(''), done.response.segments.map((s) => s.text).join(''));
    const progress = parsed.filter((e) => e.type === 'transcript.progress');
    assert.ok(progress.length >= 1);
    assert.equal(progress.at(-1).done, progress.at(-1).total);
  });

  test('bad requests: OpenAI error shape naming the field; the server lives', async () => {
    const url = srv.url + '/v1/audio/transcriptions';
    const cases = [
      [await multipart(url, { model: 'whisper-1' }, null), 400, 'file'],
      [await multipart(url, {}, Buffer.from('definitely not audio'), 'x.wav'), 400, 'file'],
      [await multipart(url, {}, jfkWav.subarray(0, 44 + 2000), 'short.wav'), 400, 'file'],
      [await multipart(url, { response_format: 'xml' }), 400, 'response_format'],
      [await multipart(url, { temperature: 'hot' }), 400, 'temperature'],
      [await multipart(url, { 'timestamp_granularities[]': 'minute' }), 400, 'timestamp_granularities[]'],
      [await multipart(url, { language: 'klingon', ...FAST }), 400, 'language'],
      [await multipart(url, { prompt: 'a '.repeat(40000) }), 400, 'prompt'],
      [await multipart(url, { vocabulary: ','.repeat(5000) }), 400, 'vocabulary'],
      [await multipart(url, { 'timestamp_granularities[]': 'hour' }), 400, 'timestamp_granularities[]'],
    ];
    for (const [r, status, param] of cases) {
      assert.equal(r.status, status, r.text);
      const body = JSON.parse(r.text);
      expectErrorShape(assert, body, status);
      assert.equal(body.error.param, param, r.text);
    }
    const notB64 = await postRaw(url, JSON.stringify({ file: '***' }));
    assert.equal(notB64.status, 400);
    assert.equal(notB64.body.error.param, 'file');
    const badJson = await postRaw(url, '{"file": ');
    assert.equal(badJson.status, 400);
    // Nesting that a recursive dump of the unknown field would overflow the stack on meets the body's limit.
    const deep = await postRaw(url, '{"x":' + '['.repeat(200000) + ']'.repeat(200000) + '}');
    assert.equal(deep.status, 400);
    assert.equal(deep.body.error.code, 'invalid_json');
    const text = await postRaw(url, 'hello', { 'Content-Type': 'text/plain' });
    assert.equal(text.status, 415);
    const broken = await postRaw(url, '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc',
      { 'Content-Type': 'multipart/form-data; boundary=x' });
    assert.equal(broken.status, 400);
    assert.equal((await getJSON(srv.url + '/health')).status, 200);
  });

  test('lifecycle: /health and /stats report the model; unload, then the next request loads it again', async () => {
    const health = await getJSON(srv.url + '/health');
    const t = health.body.transcription;
    assert.equal(t.model, 'whisper-tiny');
    assert.equal(t.loaded, true);
    assert.ok(t.requests >= 1);
    const stats = await getJSON(srv.url + '/stats');
    assert.equal(stats.body.transcription.loads, t.loads);
    const unloaded = await postRaw(srv.url + '/admin/transcription/unload', '{}');
    assert.equal(unloaded.status, 200);
    assert.equal(unloaded.body.unloaded, true);
    assert.equal(unloaded.body.loaded, false);
    const again = await postRaw(srv.url + '/admin/transcription/unload', '{}');
    assert.equal(again.body.unloaded, false);
    await multipart(srv.url + '/v1/audio/transcriptions', { language: 'en', ...FAST });
    const after = (await getJSON(srv.url + '/health')).body.transcription;
    assert.equal(after.loaded, true);
    assert.equal(after.loads, t.loads + 1);
    assert.equal(after.unloads, t.unloads + 1);
  });
});

describe('voice activity detection', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--whisper-model', whisper, '--vad-model', path.join(shared, 'silero-v6.2.0-ggml.bin')]);
  });
  after(async () => { await srv.stop(); });

  test('silence with vad: an empty text, no speech, Whisper never loaded', async () => {
    const r = await multipart(srv.url + '/v1/audio/transcriptions', { vad: 'true' }, wav(Buffer.alloc(32000 * 3)), 'silence.wav');
    assert.equal(r.status, 200, r.text);
    const body = JSON.parse(r.text);
    assert.equal(body.text, '');
    assert.deepEqual(body.hearth.speech, []);
    // The language is checked and named by its code without speech too.
    const silence = wav(Buffer.alloc(32000 * 3));
    const named = await multipart(srv.url + '/v1/audio/transcriptions', { vad: 'true', language: 'German', response_format: 'verbose_json' }, silence, 'silence.wav');
    assert.equal(JSON.parse(named.text).language, 'de', named.text);
    const unknown = await multipart(srv.url + '/v1/audio/transcriptions', { vad: 'true', language: 'klingon' }, silence, 'silence.wav');
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal((await getJSON(srv.url + '/health')).body.transcription.loads, 0);
  });

  test("vad_trim: only the speech is transcribed, times stay the clip's", async () => {
    const padded = wav(Buffer.concat([Buffer.alloc(32000 * 4), jfkWav.subarray(44), Buffer.alloc(32000 * 3)]));
    const r = await multipart(srv.url + '/v1/audio/transcriptions',
      { vad: 'true', vad_trim: 'true', response_format: 'verbose_json', language: 'en', ...FAST }, padded, 'padded.wav');
    assert.equal(r.status, 200, r.text);
    const body = JSON.parse(r.text);
    assert.ok(Math.abs(body.duration - 18.0) < 0.05, `duration ${body.duration}`);
    assert.ok(body.speech.length >= 1);
    assert.ok(body.speech[0].start > 4.0 && body.speech.at(-1).end < 15.2, JSON.stringify(body.speech));
    for (const s of body.segments) assert.ok(s.start >= 3.5, `a segment starts at ${s.start}, inside the trimmed silence`);
  });

  test("a session's speech spans keep up with the audio, part after part", async () => {
    const s = await postRaw(srv.url + '/v1/audio/sessions', JSON.stringify({ vad: true, language: 'en', ...FAST }));
    assert.equal(s.status, 200, JSON.stringify(s.body));
    // 16-bit mono 16 kHz, then silence to 18 s: the VAD runs in blocks of
    // 8.2 s while the audio arrives, so it sees the clip in two.
    const pcm = Buffer.concat([jfkWav.subarray(44), Buffer.alloc(32000 * 7)]);
    const part = 32000 * 3;
    const ends = [];
    for (let at = 0; at < pcm.length; at += part) {
      const r = await postRaw(`${srv.url}/v1/audio/sessions/${s.body.id}/audio`, wav(pcm.subarray(at, at + part)), { 'Content-Type': 'audio/wav' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      ends.push(r.body.speech.length ? r.body.speech.at(-1).end : 0);
    }
    const first = ends.findIndex((e) => e > 0);
    assert.ok(first >= 0 && first < ends.length - 2, `speech is heard early: ${ends}`);
    assert.ok(ends.at(-1) > ends[first] + 2, `the spans grow with the audio after speech was first heard: ${ends}`);
    await fetch(`${srv.url}/v1/audio/sessions/${s.body.id}`, { method: 'DELETE' });
  });

  test('vad fields are checked', async () => {
    const url = srv.url + '/v1/audio/transcriptions';
    const bad = await multipart(url, { vad: 'true', vad_threshold: '2' });
    assert.equal(bad.status, 400);
    assert.equal(JSON.parse(bad.text).error.param, 'vad_threshold');
    const orphan = await multipart(url, { vad_trim: 'true' });
    assert.equal(orphan.status, 400);
    assert.equal(JSON.parse(orphan.text).error.param, 'vad');
  });
});

describe('audio routes', () => {
  test('an idle Whisper model is unloaded after --whisper-idle-unload', async () => {
    const srv = await startServer(['--whisper-model', whisper, '--whisper-idle-unload', '1']);
    try {
      await multipart(srv.url + '/v1/audio/transcriptions', { language: 'en', ...FAST });
      assert.equal((await getJSON(srv.url + '/health')).body.transcription.loaded, true);
      let t;  // unloaded about 1 s later: waited for up to 10 s
      for (const deadline = Date.now() + 10000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
        t = (await getJSON(srv.url + '/health')).body.transcription;
        if (!t.loaded) break;
      }
      assert.equal(t.loaded, false);
      assert.equal(t.unloads, 1);
    } finally {
      await srv.stop();
    }
  });

  test('--max-audio-queue 0: requests past the running one get 429 queue_full; the place comes back', async () => {
    const srv = await startServer(['--whisper-model', whisper, '--whisper-resident', '--max-audio-queue', '0']);
    try {
      const url = srv.url + '/v1/audio/transcriptions';
      const send = async () => {
        const form = new FormData();
        form.append('file', new Blob([jfkWav]), 'jfk.wav');
        for (const [k, v] of Object.entries({ language: 'en', ...FAST })) form.append(k, String(v));
        const r = await fetch(url, { method: 'POST', body: form });
        return { status: r.status, retry: r.headers.get('retry-after'), body: await r.text() };
      };
      // Six at once: one place, held for a whole 11 s file's decoding and transcription.
      const rs = await Promise.all(Array.from({ length: 6 }, send));
      const statuses = rs.map((r) => r.status);
      assert.ok(statuses.includes(200), statuses.join(', '));
      const refused = rs.filter((r) => r.status === 429);
      assert.ok(refused.length > 0, statuses.join(', '));
      for (const r of refused) {
        assert.equal(JSON.parse(r.body).error.code, 'queue_full', r.body);
        assert.equal(r.retry, '1');
      }
      assert.ok(statuses.every((s) => s === 200 || s === 429), statuses.join(', '));
      assert.equal((await send()).status, 200, 'the place is free again once they are answered');
    } finally {
      await srv.stop();
    }
  });

  test('--max-audio-seconds: longer audio is a 413 naming file, shorter is transcribed', async () => {
    const srv = await startServer(['--whisper-model', whisper, '--max-audio-seconds', '5', '--max-body', '65536']);
    try {
      // Only the audio routes take bodies past --max-body (the uploads here are larger).
      const chat = await postRaw(srv.url + '/v1/chat/completions',
        JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'a'.repeat(100000) }] }));
      assert.equal(chat.status, 413, JSON.stringify(chat.body));
      expectErrorShape(assert, chat.body, 413);
      assert.match(chat.body.error.message, /limit of 65536 bytes/);
      const r = await multipart(srv.url + '/v1/audio/transcriptions', { language: 'en', ...FAST });
      assert.equal(r.status, 413, r.text);
      const body = JSON.parse(r.text);
      expectErrorShape(assert, body, 413);
      assert.equal(body.error.code, 'request_too_large');
      assert.equal(body.error.param, 'file');
      assert.match(body.error.message, /longer than 5 s \(--max-audio-seconds\)/);
      // 1 s, but 96 kHz in 64 channels: more input samples than 5 s allows (48 per output sample).
      const wide = await multipart(srv.url + '/v1/audio/transcriptions', { language: 'en', ...FAST },
        wav(Buffer.alloc(96000 * 64 * 2), { rate: 96000, channels: 64 }), 'wide.wav');
      assert.equal(wide.status, 413, wide.text);
      const wideBody = JSON.parse(wide.text);
      expectErrorShape(assert, wideBody, 413);
      assert.equal(wideBody.error.code, 'request_too_large');
      assert.equal(wideBody.error.param, 'file');
      assert.match(wideBody.error.message, /more than 3840000 samples across its channels.*--max-audio-seconds/);
      const head = jfkWav.indexOf('data') + 8;
      const short = Buffer.from(jfkWav.subarray(0, head + 2 * 32000));
      short.writeUInt32LE(2 * 32000, head - 4);
      short.writeUInt32LE(short.length - 8, 4);
      const ok = await multipart(srv.url + '/v1/audio/transcriptions', { language: 'en', ...FAST }, short);
      assert.equal(ok.status, 200, ok.text);
    } finally {
      await srv.stop();
    }
  });

  test('without --whisper-model: 503 model_unavailable saying how to configure one', async () => {
    const srv = await startServer([]);
    try {
      const r = await multipart(srv.url + '/v1/audio/transcriptions', {});
      assert.equal(r.status, 503);
      const body = JSON.parse(r.text);
      assert.equal(body.error.code, 'model_unavailable');
      assert.match(body.error.message, /--whisper-model/);
      assert.equal((await getJSON(srv.url + '/health')).body.transcription, undefined);
      const vad = await multipart(srv.url + '/v1/audio/transcriptions', { vad: 'true' });
      assert.equal(vad.status, 503, 'without a Whisper model, vad changes nothing');
    } finally {
      await srv.stop();
    }
  });
});
