// The chat page at / in a real browser: Debian's chromium, headless, driven
// by playwright-core. A message goes out and the streamed reply shows up;
// the stop button ends a running reply; the status line names the model.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, stats, waitForStats, kvReturned } from './lib.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

describe('web page', { skip: !fs.existsSync(CHROMIUM) && `no browser at ${CHROMIUM} (scripts/setup.sh installs chromium)` }, () => {
  let srv, browser, profile;
  before(async () => {
    srv = await startServer();
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-chromium-'));
    // A fresh profile directory (playwright passes it as --user-data-dir).
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => {
    await browser?.close();
    fs.rmSync(profile, { recursive: true, force: true });
    assert.equal((await srv.stop()).code, 0);
  });

  test('sends a message and sees the streamed reply', async () => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(srv.url + '/');
    await page.waitForFunction(() => document.getElementById('status').textContent.includes('stories260k'));
    const status = await page.textContent('#status');
    assert.match(status, /model stories260k/);
    assert.match(status, /ready/);

    // Greedy and short, so the reply can be checked against the API.
    await page.fill('#temperature', '0');
    await page.fill('#max_tokens', '30');
    await page.fill('#input', 'Tell me a story about a cat.');
    await page.click('#send');
    await page.waitForSelector('.msg.user');
    // The reply grows while streaming, then the meta line appears when done.
    await page.waitForSelector('.msg.assistant .meta', { timeout: 30000 });
    const reply = await page.textContent('.msg.assistant .text');
    const meta = await page.textContent('.msg.assistant .meta');
    assert.ok(reply.length > 0);
    assert.match(meta, /finish: length/);
    assert.match(meta, /30 generated tokens/);
    const api = await srv.client().chat.completions.create({
      model: 'stories260k', messages: [{ role: 'user', content: 'Tell me a story about a cat.' }], max_tokens: 30, temperature: 0,
    });
    assert.equal(reply, api.choices[0].message.content);
    assert.equal(await page.isEnabled('#send'), true);
    assert.equal(await page.isEnabled('#stop'), false);
    const s = await stats(srv);
    assert.ok(s.generation.streamed_requests >= 1, 'the page streamed');
    assert.deepEqual(errors, []);

    // A second turn carries the conversation.
    await page.fill('#input', 'And then?');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .meta').length === 2, null, { timeout: 30000 });
    assert.equal(await page.locator('.msg.user').count(), 2);
    await page.close();
  });

  // A reasoning model's stream, served to the page by the browser itself
  // (playwright's route): thinking shows folded above the reply, and the
  // first-token time counts from the first thought.
  test('reasoning shows as Thinking above the reply; an IME Enter does not send', async () => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const sent = [];
    await page.route('**/v1/chat/completions', async (route) => {
      sent.push(JSON.parse(route.request().postData()));
      const chunk = (delta, extra = {}) => 'data: ' + JSON.stringify({ choices: [{ index: 0, delta, finish_reason: null }], ...extra }) + '\n\n';
      const body = chunk({ role: 'assistant' }) + chunk({ reasoning_content: 'The user greets; ' }) +
        chunk({ reasoning_content: 'greet back.' }) + chunk({ content: 'Hello' }) + chunk({ content: ' there!' }) +
        'data: ' + JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) + '\n\n' +
        'data: ' + JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 7 } }) + '\n\ndata: [DONE]\n\n';
      await route.fulfill({ status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    });
    await page.goto(srv.url + '/');
    // Enter while an input method composes is its confirmation, not a send.
    await page.fill('#input', 'こんにちは');
    await page.evaluate(() => document.getElementById('input').dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', isComposing: true, bubbles: true, cancelable: true })));
    assert.equal(await page.locator('.msg.user').count(), 0);
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant .meta');
    assert.equal(await page.textContent('.msg.assistant .text'), 'Hello there!');
    assert.equal(await page.textContent('.msg.assistant details.reasoning span'), 'The user greets; greet back.');
    assert.equal(await page.textContent('.msg.assistant details.reasoning summary'), 'Thinking');
    assert.equal(await page.$eval('.msg.assistant details.reasoning', (d) => d.open), false, 'folded once the reply began');
    assert.match(await page.textContent('.msg.assistant .meta'), /finish: stop · 5 prompt \+ 7 generated tokens/);
    // The next turn sends the reply back, not the thinking.
    await page.fill('#input', 'And you?');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .meta').length === 2);
    assert.deepEqual(sent[1].messages.slice(0, 2), [{ role: 'user', content: 'こんにちは' }, { role: 'assistant', content: 'Hello there!' }]);
    assert.deepEqual(errors, []);
    await page.close();
  });

  // "New chat" while a reply streams: the old reply must not land in the new
  // conversation, and the next message goes out at once.
  test('New chat during a reply starts clean', async () => {
    const page = await browser.newPage();
    const sent = [];
    page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(r.postData())); });
    await page.goto(srv.url + '/');
    await page.fill('#temperature', '1');
    await page.fill('#max_tokens', '');
    await page.fill('#input', 'Go on forever.');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelector('.msg.assistant .text')?.textContent.length > 0, null, { timeout: 30000 });
    await page.click('#new');
    await page.fill('#max_tokens', '5');
    await page.fill('#input', 'A new start.');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant .meta', { timeout: 30000 });
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[1].messages, [{ role: 'user', content: 'A new start.' }]);
    assert.equal(await page.locator('.msg.user').count(), 1);
    await page.fill('#input', 'Then?');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .meta').length === 2, null, { timeout: 30000 });
    assert.equal(sent[2].messages.length, 3, JSON.stringify(sent[2].messages));
    assert.equal(sent[2].messages[0].content, 'A new start.');
    await page.fill('#max_tokens', '');
    await page.close();
  });

  test('the stop button ends a running reply', async () => {
    const page = await browser.newPage();
    await page.goto(srv.url + '/');
    await page.fill('#temperature', '1');
    await page.fill('#max_tokens', '');
    await page.evaluate(() => localStorage.clear());
    // Make the reply long by asking the server for it through the page's own
    // request: no max_tokens, and hold the stream by stopping right away.
    await page.fill('#input', 'Go on forever.');
    await page.click('#send');
    await page.waitForFunction(() => !document.getElementById('stop').disabled || document.querySelector('.msg.assistant .meta'));
    // Check and click in one step inside the page: the reply may end (and
    // disable the button) between a separate check and click.
    await page.evaluate(() => {
      const stop = document.getElementById('stop');
      if (!stop.disabled) stop.click();
    });
    await page.waitForSelector('.msg.assistant .meta');
    assert.match(await page.textContent('.msg.assistant .meta'), /stopped|finish/);
    assert.equal(await page.isEnabled('#send'), true);
    const after = await waitForStats(srv, (s) => s.server.requests_in_flight === 0 && kvReturned(s));
    assert.equal(after.server.requests_in_flight, 0);
    await page.close();
  });
});
