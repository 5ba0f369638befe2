// Two hearth replicas behind nginx with deploy/nginx/hearth.conf
// (docs/deploy.md): requests with a session key stick to one replica by
// consistent hashing, requests without one go by least connections, and a
// conversation's second turn lands where its first turn's KV prefix is.
// nginx runs as a child process on a free loopback port,
// with everything it writes in a temp dir.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { startServer, getJSON, sleep } from './lib.mjs';

const MODEL = 'stories260k';
const NO_EOS = { 1: -100, 2: -100 };
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONF = path.join(ROOT, 'deploy/nginx/hearth.conf');

// $NGINX_BIN, else nginx on the PATH, else /usr/sbin (Debian's place, not on
// every user's PATH). Without one the suite is skipped.
function findNginx() {
  if (process.env.NGINX_BIN) return fs.existsSync(process.env.NGINX_BIN) ? process.env.NGINX_BIN : null;
  const r = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  for (const p of ['/usr/sbin/nginx', '/usr/local/sbin/nginx']) if (fs.existsSync(p)) return p;
  return null;
}
const NGINX = findNginx();

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// deploy/nginx/hearth.conf with the two replicas and the listen address
// filled in. Fails loudly if the file no longer has the placeholders.
function deriveConf(a, b, port) {
  const src = fs.readFileSync(CONF, 'utf8');
  const count = (re) => (src.match(re) || []).length;
  assert.equal(count(/server 127\.0\.0\.1:8081\b/g), 2, `${CONF}: replica 127.0.0.1:8081 in both upstreams`);
  assert.equal(count(/server 127\.0\.0\.1:8082\b/g), 2, `${CONF}: replica 127.0.0.1:8082 in both upstreams`);
  assert.equal(count(/^\s*listen 8080;/gm), 1, `${CONF}: one "listen 8080;"`);
  assert.equal(count(/add_header/g), 0, `${CONF}: no add_header (it would hide the test's X-Hearth-Upstream)`);
  return src
    .replace(/server 127\.0\.0\.1:8081\b/g, `server 127.0.0.1:${a}`)
    .replace(/server 127\.0\.0\.1:8082\b/g, `server 127.0.0.1:${b}`)
    .replace(/^(\s*)listen 8080;/m, `$1listen 127.0.0.1:${port};`);
}

// A single nginx process (master_process off): no privilege switch, so it
// behaves the same run as root or not, and writes only inside `dir`.
function mainConf(dir) {
  const p = (name) => path.join(dir, name);
  return `daemon off;
master_process off;
worker_processes 1;
pid ${p('nginx.pid')};
error_log ${p('error.log')} notice;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path ${p('client_body')};
    proxy_temp_path ${p('proxy')};
    fastcgi_temp_path ${p('fastcgi')};
    uwsgi_temp_path ${p('uwsgi')};
    scgi_temp_path ${p('scgi')};
    # Which replica answered (the last address if nginx retried).
    add_header X-Hearth-Upstream $upstream_addr always;
    include ${p('hearth.conf')};
}
`;
}

async function startNginx(a, b) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-nginx-'));
  const errlog = path.join(dir, 'error.log');
  let lastError = '';
  for (let attempt = 0; attempt < 3; attempt++) {   // the free port can be taken between probe and bind
    const port = await freePort();
    fs.writeFileSync(path.join(dir, 'hearth.conf'), deriveConf(a, b, port));
    fs.writeFileSync(path.join(dir, 'nginx.conf'), mainConf(dir));
    const t = spawnSync(NGINX, ['-t', '-q', '-e', errlog, '-p', dir + '/', '-c', path.join(dir, 'nginx.conf')], { encoding: 'utf8' });
    assert.equal(t.status, 0, 'nginx -t rejects the derived config:\n' + t.stderr + '\n' + readLog(errlog));
    const proc = spawn(NGINX, ['-e', errlog, '-p', dir + '/', '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    const url = `http://127.0.0.1:${port}`;
    const end = Date.now() + 10000;
    while (proc.exitCode === null && Date.now() < end) {
      try {
        if ((await fetch(url + '/health')).status === 200) {
          return {
            proc, url, dir, port,
            log: () => stderr + readLog(errlog),
            async stop() {
              if (proc.exitCode === null && proc.signalCode === null) {
                proc.kill('SIGTERM');
                const k = setTimeout(() => proc.kill('SIGKILL'), 5000);
                await exited;
                clearTimeout(k);
              }
              fs.rmSync(dir, { recursive: true, force: true });
            },
          };
        }
      } catch { /* not listening yet */ }
      await sleep(50);
    }
    if (proc.exitCode === null) { proc.kill('SIGKILL'); await exited; }
    lastError = stderr + readLog(errlog);
    if (!/bind\(\)|Address already in use/.test(lastError)) break;
  }
  throw new Error('nginx did not start:\n' + lastError);
}

function readLog(file) {
  try { return fs.readFileSync(file, 'utf8'); } catch { return ''; }
}

// A prompt of a few hundred tokens: several 32-token KV blocks.
const STORY = 'Once upon a time, there was a little girl named Lily. She lived in a small house near a big forest '
  + 'with her mom, her dad and a fluffy white dog called Max. Every morning Lily and Max went outside to play in '
  + 'the garden. They ran around the old apple tree, looked for bugs under the green leaves and jumped in the '
  + 'puddles after the rain. One day Lily found a shiny red box next to the fence. She did not know who it '
  + 'belonged to, so she showed it to her mom. Her mom smiled and said they should try to find the owner.';

describe('replicas behind nginx', {
  skip: !NGINX && 'nginx is not installed (scripts/setup.sh installs nginx-light)',
  timeout: 120000,
}, () => {
  let replicas, ngx, nameOf;

  before(async () => {
    // One kernel thread each: two replicas share the machine.
    replicas = await Promise.all([startServer(['--threads', '1']), startServer(['--threads', '1'])]);
    ngx = await startNginx(replicas[0].port, replicas[1].port);
    nameOf = new Map(replicas.map((r, i) => [`127.0.0.1:${r.port}`, 'AB'[i]]));
  });
  after(async () => {
    if (ngx) await ngx.stop();
    if (replicas) await Promise.all(replicas.map((r) => r.stop()));
  });

  // Which replica answered: 'A' or 'B'; the last address when nginx retried.
  function replicaOf(res) {
    const up = res.headers.get('x-hearth-upstream');
    assert.ok(up, 'nginx adds X-Hearth-Upstream:\n' + ngx.log());
    const last = up.split(',').pop().trim();
    assert.ok(nameOf.has(last), `X-Hearth-Upstream ${up} is one of the replicas`);
    return nameOf.get(last);
  }

  async function post(route, body, headers = {}) {
    const r = await getJSON(ngx.url + route, {
      method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body),
      signal: AbortSignal.timeout(60000),
    });
    assert.equal(r.status, 200, `${route} through nginx: ${JSON.stringify(r.body)}\n${ngx.log()}`);
    return { ...r, replica: replicaOf(r) };
  }

  const short = (extra = {}) => ({ model: MODEL, prompt: 'Once upon a time', max_tokens: 2, temperature: 0, ...extra });

  // Session keys and the replica each maps to: keys until both replicas
  // have some (the ring depends on the replicas' ports), at least 8.
  let keyReplica;
  async function keysOnBothReplicas() {
    if (keyReplica) return keyReplica;
    const map = new Map();
    for (let i = 0; i < 64; i++) {
      const key = `conversation-${i}`;
      map.set(key, (await post('/v1/completions', short(), { 'x-session-affinity': key })).replica);
      if (new Set(map.values()).size === 2 && map.size >= 8) break;
    }
    assert.equal(new Set(map.values()).size, 2, 'some of 64 keys hash to each replica');
    return (keyReplica = map);
  }
  const keyOn = (map, replica) => [...map].find(([, r]) => r === replica)[0];

  test('/health and /v1/models through nginx', async () => {
    const h = await getJSON(ngx.url + '/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    replicaOf(h);
    const m = await getJSON(ngx.url + '/v1/models');
    assert.equal(m.status, 200);
    assert.equal(m.body.data[0].id, MODEL);
  });

  test('the same x-session-affinity header always reaches the same replica; keys spread over both', async () => {
    const keys = await keysOnBothReplicas();
    for (let round = 0; round < 3; round++) {
      for (const [key, replica] of keys) {
        const r = await post(round % 2 ? '/v1/chat/completions' : '/v1/completions',
          round % 2 ? { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 } : short(),
          { 'x-session-affinity': key });
        assert.equal(r.replica, replica, `key ${key}, round ${round}`);
      }
    }
  });

  test('the session_id header, and session_id / prompt_cache_key in the body, route like the header', async () => {
    const keys = await keysOnBothReplicas();
    for (const [key, replica] of keys) {
      assert.equal((await post('/v1/completions', short(), { session_id: key })).replica, replica, `session_id header ${key}`);
      assert.equal((await post('/v1/completions', short({ prompt_cache_key: key }))).replica, replica, `prompt_cache_key ${key}`);
      assert.equal((await post('/v1/chat/completions',
        { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, session_id: key })).replica, replica, `session_id ${key}`);
    }
  });

  test('key precedence: body session_id, body prompt_cache_key, x-session-affinity, session_id header', async () => {
    const keys = await keysOnBothReplicas();
    const a = keyOn(keys, 'A'), b = keyOn(keys, 'B');
    for (const [mine, other, want] of [[a, b, 'A'], [b, a, 'B']]) {
      let r = await post('/v1/completions', short({ session_id: mine, prompt_cache_key: other }), { 'x-session-affinity': other, session_id: other });
      assert.equal(r.replica, want, 'body session_id wins');
      r = await post('/v1/completions', short({ prompt_cache_key: mine }), { 'x-session-affinity': other, session_id: other });
      assert.equal(r.replica, want, 'body prompt_cache_key beats the headers');
      r = await post('/v1/completions', short(), { 'x-session-affinity': mine, session_id: other });
      assert.equal(r.replica, want, 'x-session-affinity beats the session_id header');
    }
    // A key quoted inside message text is not a key: JSON escapes its quotes.
    const quoted = await post('/v1/chat/completions', {
      model: MODEL, max_tokens: 2,
      messages: [{ role: 'user', content: `say "session_id": "${a}" and "prompt_cache_key": "${a}"` }],
    }, { 'x-session-affinity': b });
    assert.equal(quoted.replica, 'B');
  });

  test('requests without a session key go by least connections: concurrent ones use both replicas', async () => {
    const used = new Set();
    for (let round = 0; round < 3 && used.size < 2; round++) {
      const rs = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        post('/v1/completions', { model: MODEL, prompt: `Story ${i}:`, max_tokens: 32, temperature: 0, logit_bias: NO_EOS })));
      for (const r of rs) used.add(r.replica);
    }
    assert.equal(used.size, 2, 'both replicas served keyless requests');
  });

  test('streaming through nginx: SSE chunks, [DONE], the same replica for the key', async () => {
    const keys = await keysOnBothReplicas();
    const [key, replica] = [...keys][0];
    const r = await fetch(ngx.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'x-session-affinity': key },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Tell me about a cat.' }], max_tokens: 24, temperature: 0, stream: true }),
      signal: AbortSignal.timeout(60000),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    assert.equal(replicaOf(r), replica);
    const text = await r.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    assert.ok(events.length > 3, text);
    assert.equal(events.at(-1), 'data: [DONE]');
  });

  // Turn 1, then turn 2 = turn 1's messages + the reply + a new question,
  // both with one session key, through nginx. The cache is by content, so
  // each conversation starts with its own key to share no prefix with the
  // others.
  async function conversation(key, keyIn) {
    const send = (messages) => post('/v1/chat/completions',
      { model: MODEL, messages, max_tokens: 16, temperature: 0, ...(keyIn === 'body' ? { session_id: key } : {}) },
      keyIn === 'body' ? {} : { 'x-session-affinity': key });
    const turn1 = [
      { role: 'system', content: `Conversation ${key}. You tell short stories for children.` },
      { role: 'user', content: `${STORY} What did Lily find?` },
    ];
    const r1 = await send(turn1);
    const turn2 = [...turn1, { role: 'assistant', content: r1.body.choices[0].message.content }, { role: 'user', content: 'What did her mom say?' }];
    const r2 = await send(turn2);
    return { turn2, r1, r2 };
  }

  test('a conversation: both turns reach the same replica', async () => {
    for (const keyIn of ['header', 'body']) {
      const { r1, r2 } = await conversation(`story-routing-${keyIn}`, keyIn);
      assert.ok(r1.body.usage.prompt_tokens >= 128, `turn 1 spans several KV blocks (${r1.body.usage.prompt_tokens} tokens)`);
      assert.ok(r2.body.usage.prompt_tokens > r1.body.usage.prompt_tokens);
      assert.equal(r2.replica, r1.replica, `key in the ${keyIn}`);
    }
  });

  // Needs the prompt cache (KV prefixes kept per replica).
  test('a conversation: turn 2 reuses turn 1\'s KV prefix on its replica (prompt cache)', async () => {
    const { turn2, r1, r2 } = await conversation('story-cache', 'header');
    assert.equal(r2.replica, r1.replica);
    const u = r2.body.usage;
    assert.ok(u.prompt_tokens_details.cached_tokens > 0,
      `turn 2 reports cached prompt tokens: ${JSON.stringify(u)}`);
    assert.ok(u.prompt_tokens_details.cached_tokens <= r1.body.usage.prompt_tokens + r1.body.usage.completion_tokens,
      `no more than turn 1 left in the cache: turn 1 ${JSON.stringify(r1.body.usage)}, turn 2 ${JSON.stringify(u)}`);
    // The other replica never saw this conversation: nothing cached there.
    const other = replicas['AB'.indexOf(r1.replica) ^ 1];
    const cold = await getJSON(other.url + '/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: turn2, max_tokens: 16, temperature: 0 }),
      signal: AbortSignal.timeout(60000),
    });
    assert.equal(cold.status, 200);
    // Its prompt can count a few tokens fewer or more: replica A sends the
    // reply back as the ids it generated, this one tokenizes the reply's text.
    assert.ok(Math.abs(cold.body.usage.prompt_tokens - u.prompt_tokens) <= r1.body.usage.completion_tokens,
      `${cold.body.usage.prompt_tokens} vs ${u.prompt_tokens}`);
    assert.equal(cold.body.usage.prompt_tokens_details.cached_tokens, 0);
  });

  // Last: stops replica B.
  test('a replica that stops: its keys and keyless requests go to the other one', async () => {
    const keys = await keysOnBothReplicas();
    const r = await replicas[1].stop('SIGTERM');
    assert.equal(r.code, 0, replicas[1].stderr());
    for (const [key, replica] of keys) {
      const res = await post('/v1/completions', short(), { 'x-session-affinity': key });
      assert.equal(res.replica, 'A', `key ${key} (was on ${replica}) now on A`);
    }
    // Without a key too.
    for (let i = 0; i < 4; i++) assert.equal((await post('/v1/completions', short())).replica, 'A');
  });
});
