// A greedy request through the server yields the same text as
// `hearth generate` with the same settings, in-process and token for token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HEARTH, run, startServer, stats } from './lib.mjs';

const CASES = [
  ['Once upon a time', 64],
  ['The little dog was sad because', 100],
  ['Lily and Ben', 1],
  ['One day', 300],
];

test('greedy completions equal `hearth generate --temperature 0`', async () => {
  const srv = await startServer();
  try {
    const client = srv.client();
    for (const [prompt, n] of CASES) {
      const { stdout } = await run(HEARTH, ['generate', '--prompt', prompt, '--max-tokens', String(n), '--temperature', '0']);
      const expected = stdout.replace(/\n$/, '');  // generate ends its output with a newline
      const r = await client.completions.create({ model: 'stories260k', prompt, max_tokens: n, temperature: 0 });
      assert.equal(r.choices[0].text, expected, `prompt ${JSON.stringify(prompt)}, ${n} tokens`);
      let streamed = '';
      for await (const c of await client.completions.create({ model: 'stories260k', prompt, max_tokens: n, temperature: 0, stream: true }))
        streamed += c.choices[0]?.text ?? '';
      assert.equal(streamed, expected);
    }
  } finally {
    assert.equal((await srv.stop()).code, 0);
  }
});

test('greedy chat equals `hearth generate --chat --temperature 0`', async () => {
  const srv = await startServer();
  try {
    const client = srv.client();
    for (const [prompt, n] of [['Tell me a story.', 50], ['Who is Lily?', 120]]) {
      const { stdout } = await run(HEARTH, ['generate', '--chat', '--prompt', prompt, '--system', 'Be kind.', '--max-tokens', String(n), '--temperature', '0']);
      const r = await client.chat.completions.create({
        model: 'stories260k', max_tokens: n, temperature: 0,
        messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: prompt }],
      });
      assert.equal(r.choices[0].message.content, stdout.replace(/\n$/, ''), `chat ${JSON.stringify(prompt)}`);
    }
  } finally {
    assert.equal((await srv.stop()).code, 0);
  }
});

// Bytes a KV entry takes against F32's 4: BF16's 2; int8's code, and
// stories260k's 8-dimension heads carry one f32 scale each (0.5 a byte).
for (const [type, bytes] of [['bf16', 2], ['int8', 1.5]]) {
  test(`--kv-type ${type}: greedy completions equal \`hearth generate --kv-type ${type}\`; a KV budget holds ${+(4 / bytes).toFixed(2)}x the blocks`, async () => {
    const f32 = await startServer(['--kv-budget', '0.25']);
    const f32Blocks = (await stats(f32)).memory.kv_blocks_total;
    assert.equal((await f32.stop()).code, 0);
    const srv = await startServer(['--kv-type', type, '--kv-budget', '0.25']);
    try {
      const blocks = (await stats(srv)).memory.kv_blocks_total;  // the budget rounded down to whole blocks
      const want = f32Blocks * 4 / bytes;
      assert.ok(blocks >= Math.floor(want) && blocks <= Math.ceil(want + 4 / bytes), `${blocks} vs ${f32Blocks}`);
      const client = srv.client();
      for (const [prompt, n] of CASES.slice(0, 2)) {
        const { stdout } = await run(HEARTH, ['generate', '--prompt', prompt, '--max-tokens', String(n), '--temperature', '0', '--kv-type', type]);
        const r = await client.completions.create({ model: 'stories260k', prompt, max_tokens: n, temperature: 0 });
        assert.equal(r.choices[0].text, stdout.replace(/\n$/, ''), `prompt ${JSON.stringify(prompt)}, ${n} tokens`);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });
}
