// Structured output end to end: chat completions with response_format on
// the bundled model, which knows nothing of JSON, so everything that makes
// the reply valid is the grammar.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, postRaw, expectErrorShape } from './lib.mjs';

const MODEL = 'stories260k';
const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 10 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    tags: { type: 'array', items: { enum: ['red', 'blue'] }, maxItems: 2 },
    pet: { anyOf: [{ type: 'null' }, { type: 'object', properties: { kind: { type: 'string', maxLength: 5 } }, required: ['kind'] }] },
  },
  required: ['name', 'age', 'tags', 'pet'],
};

// The schema's rules, checked by hand (the subset above).
function checkPerson(v) {
  assert.deepEqual(Object.keys(v), ['name', 'age', 'tags', 'pet'], 'the properties, in schema order');
  assert.equal(typeof v.name, 'string');
  assert.ok([...v.name].length <= 10, v.name);
  assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 120, String(v.age));
  assert.ok(Array.isArray(v.tags) && v.tags.length <= 2);
  for (const t of v.tags) assert.ok(['red', 'blue'].includes(t), t);
  if (v.pet !== null) {
    assert.deepEqual(Object.keys(v.pet), ['kind']);
    assert.ok([...v.pet.kind].length <= 5);
  }
}

describe('structured output', () => {
  let srv, client;
  before(async () => {
    srv = await startServer();
    client = srv.client();
  });
  after(async () => {
    const r = await srv.stop('SIGTERM');
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  });

  const messages = [{ role: 'user', content: 'Describe a person as JSON.' }];

  test('json_schema: the content parses and follows the schema, greedy and sampled', async () => {
    for (const [temperature, seed] of [[0, 1], [1, 1], [1, 2], [1.5, 3]]) {
      const r = await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 400, temperature, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: SCHEMA } },
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', c.message.content);
      checkPerson(JSON.parse(c.message.content));
    }
  });

  test('json_schema while streaming: the deltas join into a valid document', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL, messages, max_tokens: 400, temperature: 1, seed: 7, stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: SCHEMA } },
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    checkPerson(JSON.parse(text));
  });

  test('json_schema with the bounds and patterns zod writes: every reply in range and matching', async () => {
    // z.object({ rating: z.number().int().min(1).max(10), price: z.number().positive().max(100),
    //   offset: z.number().int().min(-50).lt(0), code: z.string().regex(/^[A-Z]{3}-\d{2,4}$/),
    //   tag: z.string().regex(/^[a-z]+$/).max(6) }), as zod's JSON Schema writes it
    const schema = {
      type: 'object',
      properties: {
        rating: { type: 'integer', minimum: 1, maximum: 10 },
        price: { type: 'number', exclusiveMinimum: 0, maximum: 100 },
        offset: { type: 'integer', minimum: -50, exclusiveMaximum: 0 },
        code: { type: 'string', pattern: '^[A-Z]{3}-\\d{2,4}$' },
        tag: { type: 'string', pattern: '^[a-z]+$', maxLength: 6 },
      },
      required: ['rating', 'price', 'offset', 'code', 'tag'],
      additionalProperties: false,
    };
    for (const [temperature, seed] of [[0, 1], [1, 2], [1.5, 3], [1.5, 4]]) {
      const r = await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 300, temperature, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'item', strict: true, schema } },
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', c.message.content);
      const v = JSON.parse(c.message.content);
      assert.ok(Number.isInteger(v.rating) && v.rating >= 1 && v.rating <= 10, c.message.content);
      assert.ok(typeof v.price === 'number' && v.price > 0 && v.price <= 100, c.message.content);
      assert.ok(Number.isInteger(v.offset) && v.offset >= -50 && v.offset < 0, c.message.content);
      assert.match(v.code, /^[A-Z]{3}-\d{2,4}$/u);
      assert.match(v.tag, /^[a-z]+$/u);
      assert.ok(v.tag.length <= 6, v.tag);
    }
  });

  test('json_object: the content is a JSON object', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({
        model: MODEL, messages, max_tokens: 300, temperature: 0.7, seed,
        response_format: { type: 'json_object' },
      });
      const c = r.choices[0];
      if (c.finish_reason === 'length') continue;  // a free object may outgrow max_tokens
      const v = JSON.parse(c.message.content);
      assert.equal(typeof v, 'object');
      assert.ok(v !== null && !Array.isArray(v));
    }
  });

  test('an unsupported schema and bad response_format shapes are 400s in OpenAI shape', async () => {
    await assert.rejects(client.chat.completions.create({
      model: MODEL, messages, max_tokens: 5,
      response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'string', pattern: '^(?=a)a+$' } } },
    }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, e.constructor.name);
      assert.equal(e.status, 400);
      assert.equal(e.type, 'invalid_request_error');
      assert.equal(e.param, 'response_format.json_schema.schema');
      assert.match(e.message, /pattern/);
      assert.match(e.message, /\/pattern/);
      return true;
    });
    for (const [format, param] of [
      [{ type: 'yaml' }, 'response_format.type'],
      [{ type: 'json_schema' }, 'response_format.json_schema'],
      [{ type: 'json_schema', json_schema: { name: 'p', schema: { type: 'integer', multipleOf: 7 } } }, 'response_format.json_schema.schema'],
    ]) {
      const r = await postRaw(srv.url + '/v1/chat/completions',
        JSON.stringify({ model: MODEL, messages, response_format: format }));
      assert.equal(r.status, 400, JSON.stringify(format));
      expectErrorShape(assert, r.body, r.status);
      assert.equal(r.body.error.param, param);
    }
  });

  test('hostile schemas are answered, never crash or stall the server', async () => {
    const ask = (schema, stream = false) => postRaw(srv.url + '/v1/chat/completions', JSON.stringify({
      model: MODEL, messages, max_tokens: 20, stream,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
    }));
    // A schema that starts with itself: the matcher entered it forever (a stack overflow).
    let r = await ask({ anyOf: [{ $ref: '#' }, { type: 'null' }] });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.error.message, /refers back to itself/);
    // A million '(' in a pattern: the parser's recursion.
    r = await ask({ type: 'string', pattern: '('.repeat(1000000) });
    assert.equal(r.status, 400, JSON.stringify(r.body).slice(0, 300));
    // Thousands of alike options: more parse stacks than a step may take.
    const many = Array.from({ length: 5000 }, (_, i) => ({ type: 'string', maxLength: 10 + i }));
    r = await ask({ anyOf: many });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    expectErrorShape(assert, r.body, r.status);
    assert.match(r.body.error.message, /too ambiguous/);
    // Thousands of optional parts in a row: millions of steps a byte.
    r = await ask({ type: 'string', pattern: '^' + '.?'.repeat(4000) + '$' });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.error.message, /optional parts in a row/);
    // One that becomes too ambiguous only midway (at the value's quote,
    // after the key the grammar writes) fails that request as the client's
    // error, not the server's: a 400, or an error event once the stream
    // has begun.
    const midway = { type: 'object', properties: { x: { anyOf: many } }, required: ['x'] };
    r = await ask(midway);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    expectErrorShape(assert, r.body, r.status);
    assert.match(r.body.error.message, /too ambiguous/);
    r = await ask(midway, true);
    assert.equal(r.status, 200);
    const events = String(r.body).split('\n').filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)));
    const failure = events.find((e) => e.error);
    assert.ok(failure, String(r.body));
    assert.equal(failure.error.type, 'invalid_request_error');
    assert.match(failure.error.message, /too ambiguous/);
    // And the server still answers.
    const ok = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 3 });
    assert.ok(ok.choices[0].message.content !== undefined);
  });
});
