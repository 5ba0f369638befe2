// The chat page served at /: one self-contained HTML file (no external
// scripts, styles or fonts), compiled into the binary.
#include "server/web_ui.h"

namespace hearth::server {

namespace {

const char kIndexHtml[] = R"HEARTH_HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hearth</title>
<style>
  :root { --bg:#faf8f5; --fg:#222; --muted:#777; --accent:#b5541c; --user:#efe7dc; --bot:#fff; --err:#b00020; --line:#ddd; }
  @media (prefers-color-scheme: dark) {
    :root { --bg:#1c1b1a; --fg:#eee; --muted:#999; --accent:#e08a4e; --user:#33302c; --bot:#262524; --err:#ff6b6b; --line:#3a3836; }
  }
  * { box-sizing: border-box; }
  body { margin:0; font:15px/1.45 system-ui, sans-serif; background:var(--bg); color:var(--fg); display:flex; flex-direction:column; height:100vh; }
  header { display:flex; align-items:center; gap:12px; padding:8px 14px; border-bottom:1px solid var(--line); }
  header h1 { font-size:17px; margin:0; color:var(--accent); }
  #status { color:var(--muted); font-size:13px; flex:1; }
  #status.bad { color:var(--err); }
  main { flex:1; display:flex; min-height:0; }
  #chat { flex:1; overflow-y:auto; padding:14px; display:flex; flex-direction:column; gap:10px; }
  .msg { max-width:48rem; padding:8px 12px; border-radius:10px; white-space:pre-wrap; word-wrap:break-word; border:1px solid var(--line); }
  .msg.user { align-self:flex-end; background:var(--user); }
  .msg.assistant { align-self:flex-start; background:var(--bot); }
  .msg.error { align-self:flex-start; color:var(--err); border-color:var(--err); }
  .meta { font-size:12px; color:var(--muted); margin-top:4px; white-space:normal; }
  details.reasoning { color:var(--muted); font-size:13px; margin-bottom:6px; }
  details.reasoning summary { cursor:pointer; white-space:normal; }
  aside { width:250px; border-left:1px solid var(--line); padding:10px 14px; overflow-y:auto; font-size:13px; }
  aside label { display:block; margin:8px 0 2px; color:var(--muted); }
  aside input, aside textarea { width:100%; font:inherit; padding:4px 6px; background:var(--bot); color:var(--fg); border:1px solid var(--line); border-radius:6px; }
  footer { display:flex; gap:8px; padding:10px 14px; border-top:1px solid var(--line); }
  #input { flex:1; resize:none; height:3.2em; font:inherit; padding:6px 8px; border-radius:8px; border:1px solid var(--line); background:var(--bot); color:var(--fg); }
  button { font:inherit; padding:6px 14px; border-radius:8px; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; }
  button.secondary { background:transparent; color:var(--accent); }
  button:disabled { opacity:.45; cursor:default; }
  #mic { touch-action:none; user-select:none; }
  #mic.recording { background:var(--err); border-color:var(--err); color:#fff; }
  #mic.transcribing { cursor:progress; }
  @media (max-width: 700px) { aside { display:none; } }
</style>
</head>
<body>
<header>
  <h1>hearth</h1>
  <span id="status">connecting…</span>
  <button id="new" class="secondary" title="start a new conversation">New chat</button>
</header>
<main>
  <div id="chat" aria-live="polite"></div>
  <aside>
    <label for="system">System prompt</label>
    <textarea id="system" rows="3" placeholder="(none)"></textarea>
    <label for="temperature">Temperature</label>
    <input id="temperature" type="number" min="0" max="2" step="0.05" placeholder="server default">
    <label for="top_p">Top p</label>
    <input id="top_p" type="number" min="0" max="1" step="0.05" placeholder="server default">
    <label for="top_k">Top k</label>
    <input id="top_k" type="number" min="0" step="1" placeholder="server default">
    <label for="min_p">Min p</label>
    <input id="min_p" type="number" min="0" max="1" step="0.01" placeholder="server default">
    <label for="repetition_penalty">Repetition penalty</label>
    <input id="repetition_penalty" type="number" min="0" step="0.05" placeholder="off">
    <label for="max_tokens">Max tokens</label>
    <input id="max_tokens" type="number" min="1" step="1" placeholder="until EOS">
    <label for="seed">Seed</label>
    <input id="seed" type="number" step="1" placeholder="random">
    <label for="apikey">API key</label>
    <input id="apikey" type="password" placeholder="if the server needs one" autocomplete="off">
  </aside>
</main>
<footer>
  <textarea id="input" placeholder="Send a message (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="mic" class="secondary" hidden title="Hold to talk (or hold Space or Enter); Escape cancels">Hold to talk</button>
  <button id="send">Send</button>
  <button id="stop" class="secondary" disabled>Stop</button>
</footer>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const chat = $("chat"), input = $("input"), sendBtn = $("send"), stopBtn = $("stop"), micBtn = $("mic"), statusEl = $("status");
let history = [];      // {role, content}
let controller = null; // AbortController of the running request
let modelId = null;

for (const id of ["system", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_tokens", "seed", "apikey"]) {
  const el = $(id), key = "hearth." + id;
  if (localStorage.getItem(key) !== null) el.value = localStorage.getItem(key);
  el.addEventListener("change", () => localStorage.setItem(key, el.value));
}

function headers(type = "application/json") {
  const h = type ? { "Content-Type": type } : {};
  if ($("apikey").value) h["Authorization"] = "Bearer " + $("apikey").value;
  return h;
}

async function refreshStatus() {
  try {
    const health = await (await fetch("/health")).json();
    let line = health.status === "ok" ? "ready" : health.status;
    const r = await fetch("/v1/models", { headers: headers() });
    if (r.ok) {
      const m = (await r.json()).data[0];
      modelId = m.id;
      line = `model ${m.id} · context ${m.context_length} · ${line}`;
    } else if (r.status === 401) {
      line = `model ${health.model} · ${line} · API key needed`;
      modelId = health.model;
    }
    line += ` · queue ${health.queued} waiting, ${health.running} running`;
    statusEl.textContent = line;
    statusEl.className = health.status === "ok" ? "" : "bad";
    micBtn.hidden = !health.transcription;  // present only with --whisper-model
  } catch (e) {
    statusEl.textContent = "server unreachable";
    statusEl.className = "bad";
  }
}

function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  div.appendChild(body);
  chat.appendChild(div);
  chat.scrollTop = chat.scrollHeight;
  return div;
}

function addMeta(div, text) {
  const meta = document.createElement("div");
  meta.className = "meta";
  meta.textContent = text;
  div.appendChild(meta);
}

function numberField(body, id, integer) {
  const v = $(id).value.trim();
  if (v === "") return;
  body[id] = integer ? parseInt(v, 10) : parseFloat(v);
}

// The error of a failed response, from its OpenAI-shaped body when it has one.
async function failure(r) {
  let msg = r.status + " " + r.statusText;
  try { msg = (await r.json()).error.message; } catch (e) {}
  return new Error(msg);
}

function setBusy(busy) {
  sendBtn.disabled = busy;
  stopBtn.disabled = !busy;
}

// The thinking of a reasoning model, folded above its reply (shown open
// while it streams); it is not sent back with the conversation.
function addReasoning(div) {
  const details = document.createElement("details");
  details.className = "reasoning";
  details.open = true;
  const summary = document.createElement("summary");
  summary.textContent = "Thinking";
  const body = document.createElement("span");
  details.append(summary, body);
  div.insertBefore(details, div.firstChild);
  return body;
}

async function send() {
  const text = input.value.trim();
  if (!text || controller) return;
  input.value = "";
  // This conversation's turns: "New chat" during the reply starts another,
  // which the end of this one must not write into.
  const turns = history;
  turns.push({ role: "user", content: text });
  addMessage("user", text);
  const messages = [];
  if ($("system").value.trim()) messages.push({ role: "system", content: $("system").value.trim() });
  messages.push(...turns);
  const body = { model: modelId || "default", messages, stream: true, stream_options: { include_usage: true } };
  numberField(body, "temperature"); numberField(body, "top_p"); numberField(body, "top_k", true);
  numberField(body, "min_p"); numberField(body, "repetition_penalty"); numberField(body, "max_tokens", true);
  numberField(body, "seed", true);

  const div = addMessage("assistant", "");
  const out = div.querySelector(".text");
  const mine = controller = new AbortController();
  setBusy(true);
  const t0 = performance.now();
  let tFirst = 0, reply = "", thinking = "", thinkingEl = null, finish = null, usage = null;
  try {
    const r = await fetch("/v1/chat/completions", { method: "POST", headers: headers(), body: JSON.stringify(body), signal: mine.signal });
    if (!r.ok) throw await failure(r);
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ")) continue;
          const data = line.slice(6);
          if (data === "[DONE]") continue;
          const j = JSON.parse(data);
          if (j.error) throw new Error(j.error.message);
          if (j.usage) usage = j.usage;
          const c = j.choices && j.choices[0];
          if (!c) continue;
          const d = c.delta || {};
          // The first token may be thinking or a tool call, not content.
          if (!tFirst && (d.content || d.reasoning_content || d.tool_calls)) tFirst = performance.now();
          if (d.reasoning_content) {
            thinkingEl = thinkingEl || addReasoning(div);
            thinking += d.reasoning_content;
            thinkingEl.textContent = thinking;
          }
          if (d.content) {
            if (thinkingEl && !reply) thinkingEl.parentElement.open = false;  // once: the reader may open it again
            reply += d.content;
            out.textContent = reply;
          }
          if (d.reasoning_content || d.content) chat.scrollTop = chat.scrollHeight;
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
    }
    turns.push({ role: "assistant", content: reply });
    const secs = (performance.now() - (tFirst || t0)) / 1000;
    let meta = `finish: ${finish}`;
    if (usage) meta += ` · ${usage.prompt_tokens} prompt + ${usage.completion_tokens} generated tokens`;
    if (usage && secs > 0 && usage.completion_tokens > 1) meta += ` · ${((usage.completion_tokens - 1) / secs).toFixed(1)} tok/s`;
    if (tFirst) meta += ` · first token ${Math.round(tFirst - t0)} ms`;
    addMeta(div, meta);
  } catch (e) {
    if (e.name === "AbortError") {
      turns.push({ role: "assistant", content: reply });
      addMeta(div, "stopped");
    } else {
      div.className = "msg error";
      out.textContent = (reply ? reply + "\n" : "") + "Error: " + e.message;
      turns.pop();
    }
  } finally {
    if (controller === mine) {  // not after "New chat" let another begin
      controller = null;
      setBusy(false);
    }
    refreshStatus();
  }
}

// Hold to talk: the microphone, captured at Whisper's 16 kHz, streams into a
// transcription session while the button is held; on release the transcript
// goes into the message box, unsent.

// The capture worklet posts the samples in 300 ms chunks; on any message it
// posts what is left, then null, and stops (the port keeps order, so null
// comes last).
const CAPTURE = `registerProcessor("capture", class extends AudioWorkletProcessor {
  constructor() {
    super();
    this.buf = new Float32Array(4800);
    this.n = 0;
    this.live = true;
    this.port.onmessage = () => { this.port.postMessage(this.buf.slice(0, this.n)); this.port.postMessage(null); this.live = false; };
  }
  process(inputs) {
    if (!this.live) return false;  // chromium still calls it while the source is connected
    for (const x of inputs[0][0] || []) {
      this.buf[this.n++] = x;
      if (this.n === this.buf.length) { this.port.postMessage(this.buf.slice()); this.n = 0; }
    }
    return true;
  }
});`;
let rec = null;  // the recording in progress

function setMic(state) {  // "", "recording" or "transcribing"
  micBtn.className = "secondary " + state;
  micBtn.textContent = { recording: "Listening…", transcribing: "Transcribing…" }[state] || "Hold to talk";
  micBtn.disabled = state === "transcribing";
}

async function sessionCall(method, path, body, type) {
  const r = await fetch("/v1/audio/sessions" + path, { method, headers: headers(type), body });
  if (!r.ok) throw await failure(r);
  return r.status === 204 ? null : r.json();
}

// Sends the captured chunks in order, one request at a time: chunks that come
// while one is in flight go out together in the next.
async function pump(r) {
  while (r.chunks.length) {
    const chunks = r.chunks.splice(0), samples = new Float32Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) { samples.set(c, at); at += c.length; }
    await sessionCall("POST", `/${r.id}/audio`, samples.buffer, "audio/pcm;rate=16000");
  }
}

// A failed pump stays in r.pumping: nothing more goes out, and awaiting it throws.
function kick(r) {
  if (!r.id || r.pumping) return;
  r.pumping = pump(r).then(() => { r.pumping = null; });
  r.pumping.catch(r.fail);
}

async function talk() {
  const r = rec = { chunks: [], id: null, pumping: null };
  // Resolves on release (true) or cancel (false); rejects when a chunk fails.
  const held = new Promise((resolve, reject) => { r.release = resolve; r.fail = reject; });
  setMic("recording");
  try {
    if (!navigator.mediaDevices) throw new Error("the browser allows the microphone only over https or on localhost");
    try {
      r.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
    } catch (e) {
      throw e.name === "NotAllowedError" ? new Error("microphone permission denied") : e;
    }
    r.ctx = new AudioContext({ sampleRate: 16000 });
    const url = URL.createObjectURL(new Blob([CAPTURE], { type: "text/javascript" }));
    await r.ctx.audioWorklet.addModule(url);
    URL.revokeObjectURL(url);
    const node = new AudioWorkletNode(r.ctx, "capture", { numberOfOutputs: 0 });
    const drained = new Promise((resolve) => {
      node.port.onmessage = (e) => {
        if (e.data === null) return resolve();
        if (e.data.length) { r.chunks.push(e.data); kick(r); }
      };
    });
    r.ctx.createMediaStreamSource(r.stream).connect(node);
    r.id = (await sessionCall("POST", "", "{}")).id;
    kick(r);
    if (await held) {
      setMic("transcribing");
      node.port.postMessage("stop");
      await drained;
      kick(r);
      await r.pumping;
      const { text } = await sessionCall("POST", `/${r.id}/finish`, undefined, null);
      r.id = null;
      insertText(text.trim());
    }
  } catch (e) {
    addMessage("error", "Microphone: " + e.message);
  } finally {
    // Cancelled or failed: the server frees the session now, not at its timeout.
    if (r.id) sessionCall("DELETE", "/" + r.id, undefined, null).catch(() => {});
    if (r.stream) r.stream.getTracks().forEach((t) => t.stop());
    if (r.ctx) r.ctx.close();
    rec = null;
    setMic("");
  }
}

// At the cursor, a space apart from the text around it.
function insertText(text) {
  const before = input.value.slice(0, input.selectionStart), after = input.value.slice(input.selectionEnd);
  if (text) {
    const add = (before && !/\s$/.test(before) ? " " : "") + text + (after && !/^\s/.test(after) ? " " : "");
    input.value = before + add + after;
    input.selectionStart = input.selectionEnd = before.length + add.length;
  }
  input.focus();
}

const holdKey = (e) => e.key === " " || e.key === "Enter";
micBtn.addEventListener("pointerdown", (e) => {
  if (rec || e.button !== 0) return;
  micBtn.setPointerCapture(e.pointerId);  // the release counts wherever the pointer is
  talk();
});
micBtn.addEventListener("pointerup", () => rec && rec.release(true));
micBtn.addEventListener("pointercancel", () => rec && rec.release(true));
micBtn.addEventListener("keydown", (e) => {
  if (!holdKey(e)) return;
  e.preventDefault();  // no click from Enter
  if (!rec && !e.repeat) talk();
});
micBtn.addEventListener("keyup", (e) => { if (holdKey(e) && rec) rec.release(true); });
micBtn.addEventListener("blur", () => rec && rec.release(true));
document.addEventListener("keydown", (e) => { if (e.key === "Escape" && rec) rec.release(false); });

sendBtn.addEventListener("click", send);
stopBtn.addEventListener("click", () => controller && controller.abort());
input.addEventListener("keydown", (e) => {
  // Enter that confirms an input method's composition (Japanese, Chinese)
  // is not a send.
  if (e.isComposing || e.keyCode === 229) return;
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
});
$("new").addEventListener("click", () => {
  if (controller) {
    controller.abort();
    controller = null;
    setBusy(false);
  }
  history = [];
  chat.textContent = "";
  input.focus();
});
refreshStatus();
setInterval(refreshStatus, 5000);
input.focus();
</script>
</body>
</html>
)HEARTH_HTML";

}  // namespace

const char* web_index_html() { return kIndexHtml; }

}  // namespace hearth::server
