// Batch invariance: a seeded request gives the same text alone and among
// other requests that arrive at random times (so it shares steps with
// prefill chunks and other decodes in every combination), on quantized
// (MLX 4-bit), BF16 and F32 weights.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HEARTH, run, startServer, postRaw, sleep } from './lib.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-invariance-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

async function complete(srv, body) {
  const r = await postRaw(srv.url + '/v1/completions', JSON.stringify(body));
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.choices[0].text;
}

for (const [name, mk] of [
  ['qwen3 MLX 4-bit', ['--arch', 'qwen3', '--quant', 'mlx4', '--dtype', 'bf16']],
  ['llama BF16', ['--arch', 'llama', '--dtype', 'bf16']],
  ['stories260k F32', null],
]) {
  test(`${name}: a seeded request alone and among 7 others arriving at random times gives the same text`, async () => {
    let model = [];
    if (mk) {
      const dir = path.join(tmp, name.replace(/\W+/g, '-'));
      await run(HEARTH, ['mkmodel', '--out', dir, ...mk]);
      model = ['--model', dir];
    }
    // No prompt cache: every request computes its whole prompt, in chunks
    // that share steps with the others.
    const srv = await startServer([...model, '--max-batch', '8', '--prompt-cache', '0']);
    try {
      const subject = { prompt: 'Once upon a time, in a quiet town by the sea, there lived', max_tokens: 48,
        temperature: 0.9, top_p: 0.95, seed: 1234, logit_bias: { 2: -100 } };
      const alone = await complete(srv, subject);
      let seed = 7;
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
      for (let round = 0; round < 3; ++round) {
        const others = Array.from({ length: 7 }, (_, i) => (async () => {
          await sleep(rand() * 60);
          return complete(srv, { prompt: `Story ${round}-${i}: ` + 'the little fox ran '.repeat(1 + Math.floor(rand() * 20)),
            max_tokens: 10 + Math.floor(rand() * 40), temperature: 0.7, seed: i });
        })());
        await sleep(rand() * 40);
        const together = await complete(srv, subject);
        await Promise.all(others);
        assert.equal(together, alone, `round ${round}`);
      }
    } finally {
      await srv.stop();
    }
  });
}
