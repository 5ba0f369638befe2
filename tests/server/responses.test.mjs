// OpenAI's Responses API end to end through the official `openai` SDK.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, postRaw, stats } from './lib.mjs';

const MODEL = 'stories260k';

describe('Responses', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--response-store-ttl', '2']);
    client = srv.client();
  });
  after(async () => { await srv.stop(); });

  test('responses.create: output text, usage, the same text as chat completions', async () => {
    const r = await client.responses.create({ model: MODEL, instructions: 'You tell stories.', input: 'Once upon a time', max_output_tokens: 20, temperature: 0 });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.ok(['completed', 'incomplete'].includes(r.status));
    assert.equal(r.output[0].type, 'message');
    assert.equal(r.output[0].role, 'assistant');
    const chat = await client.chat.completions.create({
      model: MODEL, max_tokens: 20, temperature: 0,
      messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Once upon a time' }],
    });
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    if (chat.choices[0].finish_reason === 'length') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.instructions, 'You tell stories.');
    assert.equal(r.max_output_tokens, 20);
  });

  test('input items: messages with content parts, developer role; same prompt as the chat route', async () => {
    const r = await client.responses.create({
      model: MODEL, max_output_tokens: 8, temperature: 0,
      input: [{ role: 'developer', content: 'Be brief.' }, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] }],
    });
    const chat = await client.chat.completions.create({
      model: MODEL, max_tokens: 8, temperature: 0, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }],
    });
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.output_text, chat.choices[0].message.content);
  });

  test('previous_response_id continues the stored conversation (and hits the prompt cache)', async () => {
    const first = await client.responses.create({ model: MODEL, input: 'Tell me about a cat named Tom.', max_output_tokens: 40, temperature: 0 });
    const second = await client.responses.create({ model: MODEL, input: 'What did Tom do next?', previous_response_id: first.id, max_output_tokens: 8, temperature: 0 });
    assert.equal(second.previous_response_id, first.id);
    // The same conversation sent whole through chat completions.
    const chat = await client.chat.completions.create({
      model: MODEL, max_tokens: 8, temperature: 0,
      messages: [{ role: 'user', content: 'Tell me about a cat named Tom.' }, { role: 'assistant', content: first.output_text },
        { role: 'user', content: 'What did Tom do next?' }],
    });
    assert.equal(second.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(second.output_text, chat.choices[0].message.content);
    assert.ok(second.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(second.usage));
  });

  test('retrieve and delete; unknown ids are 404s', async () => {
    const r = await client.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4 });
    const got = await client.responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(got.output_text, r.output_text);
    const s = await stats(srv);
    assert.ok(s.response_store.entries >= 1);
    assert.equal(s.response_store.max_bytes, 32 << 20);
    assert.equal(s.response_store.ttl_ms, 2000);
    await client.responses.delete(r.id);
    await assert.rejects(client.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(client.responses.create({ model: MODEL, input: 'x', previous_response_id: r.id }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError);
      assert.equal(e.param, 'previous_response_id');
      return true;
    });
  });

  test('store: false keeps nothing; stored responses expire after the TTL', async () => {
    const unstored = await client.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 2, store: false });
    await assert.rejects(client.responses.retrieve(unstored.id), (e) => e instanceof OpenAI.NotFoundError);
    const r = await client.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 2 });
    await client.responses.retrieve(r.id);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await assert.rejects(client.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError);
  });

  test('streaming: the event chain, sequence numbers, and the same text as the whole answer', async () => {
    const params = { model: MODEL, input: 'Once upon a time', max_output_tokens: 16, temperature: 0 };
    const whole = await client.responses.create(params);
    const stream = await client.responses.create({ ...params, stream: true });
    const events = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)));
    events.forEach((e, i) => assert.equal(e.sequence_number, i));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.equal(text, whole.output_text);
    assert.equal(events.find((e) => e.type === 'response.output_text.done').text, whole.output_text);
    const last = events.at(-1).response;
    assert.equal(last.output[0].content[0].text, whole.output_text);
    assert.deepEqual(last.usage, whole.usage);
    // The SDK's stream helper assembles the same response.
    const helper = client.responses.stream(params);
    const final = await helper.finalResponse();
    assert.equal(final.output_text, whole.output_text);
  });

  test('bad requests: OpenAI error shape naming the field', async () => {
    const cases = [
      [{ model: MODEL }, 'input'],
      [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input[0].type'],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].type'],
      [{ input: 'x', tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      // A name the model's markup cannot hold ("<", ">", a space end it early).
      [{ input: 'x', tools: [{ type: 'function', name: 'a>b', parameters: {} }] }, 'tools[0].name'],
      [{ input: 'x', tools: [{ type: 'function', name: 'x'.repeat(129), parameters: {} }] }, 'tools[0].name'],
      [{ input: 'x', tool_choice: 'required' }, 'tool_choice'],
      [{ input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
      [{ input: 'x', previous_response_id: 5 }, 'previous_response_id'],
      [{ input: 'x', reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
      [{ input: 'x', background: true }, 'background'],
    ];
    for (const [body, param] of cases) {
      const r = await postRaw(srv.url + '/v1/responses', JSON.stringify(body));
      assert.equal(r.status, 400, JSON.stringify(body) + ' ' + JSON.stringify(r.body));
      assert.equal(r.body.error.param, param, JSON.stringify(r.body));
      assert.equal(r.body.error.type, 'invalid_request_error');
    }
  });
});
