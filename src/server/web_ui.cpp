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
  aside { width:250px; border-left:1px solid var(--line); padding:10px 14px; overflow-y:auto; font-size:13px; }
  aside label { display:block; margin:8px 0 2px; color:var(--muted); }
  aside input, aside textarea { width:100%; font:inherit; padding:4px 6px; background:var(--bot); color:var(--fg); border:1px solid var(--line); border-radius:6px; }
  footer { display:flex; gap:8px; padding:10px 14px; border-top:1px solid var(--line); }
  #input { flex:1; resize:none; height:3.2em; font:inherit; padding:6px 8px; border-radius:8px; border:1px solid var(--line); background:var(--bot); color:var(--fg); }
  button { font:inherit; padding:6px 14px; border-radius:8px; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; }
  button.secondary { background:transparent; color:var(--accent); }
  button:disabled { opacity:.45; cursor:default; }
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
  <button id="send">Send</button>
  <button id="stop" class="secondary" disabled>Stop</button>
</footer>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const chat = $("chat"), input = $("input"), sendBtn = $("send"), stopBtn = $("stop"), statusEl = $("status");
let history = [];      // {role, content}
let controller = null; // AbortController of the running request
let modelId = null;

for (const id of ["system", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_tokens", "seed", "apikey"]) {
  const el = $(id), key = "hearth." + id;
  if (localStorage.getItem(key) !== null) el.value = localStorage.getItem(key);
  el.addEventListener("change", () => localStorage.setItem(key, el.value));
}

function headers() {
  const h = { "Content-Type": "application/json" };
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

function setBusy(busy) {
  sendBtn.disabled = busy;
  stopBtn.disabled = !busy;
}

async function send() {
  const text = input.value.trim();
  if (!text || controller) return;
  input.value = "";
  history.push({ role: "user", content: text });
  addMessage("user", text);
  const messages = [];
  if ($("system").value.trim()) messages.push({ role: "system", content: $("system").value.trim() });
  messages.push(...history);
  const body = { model: modelId || "default", messages, stream: true, stream_options: { include_usage: true } };
  numberField(body, "temperature"); numberField(body, "top_p"); numberField(body, "top_k", true);
  numberField(body, "min_p"); numberField(body, "repetition_penalty"); numberField(body, "max_tokens", true);
  numberField(body, "seed", true);

  const div = addMessage("assistant", "");
  const out = div.querySelector(".text");
  controller = new AbortController();
  setBusy(true);
  const t0 = performance.now();
  let tFirst = 0, reply = "", finish = null, usage = null, chunks = 0;
  try {
    const r = await fetch("/v1/chat/completions", { method: "POST", headers: headers(), body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) {
      let msg = r.status + " " + r.statusText;
      try { msg = (await r.json()).error.message; } catch (e) {}
      throw new Error(msg);
    }
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
          if (c.delta && c.delta.content) {
            if (!tFirst) tFirst = performance.now();
            reply += c.delta.content;
            out.textContent = reply;
            chunks++;
            chat.scrollTop = chat.scrollHeight;
          }
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
    }
    history.push({ role: "assistant", content: reply });
    const secs = (performance.now() - (tFirst || t0)) / 1000;
    let meta = `finish: ${finish}`;
    if (usage) meta += ` · ${usage.prompt_tokens} prompt + ${usage.completion_tokens} generated tokens`;
    if (usage && secs > 0 && usage.completion_tokens > 1) meta += ` · ${((usage.completion_tokens - 1) / secs).toFixed(1)} tok/s`;
    if (tFirst) meta += ` · first token ${Math.round(tFirst - t0)} ms`;
    addMeta(div, meta);
  } catch (e) {
    if (e.name === "AbortError") {
      history.push({ role: "assistant", content: reply });
      addMeta(div, "stopped");
    } else {
      div.className = "msg error";
      out.textContent = (reply ? reply + "\n" : "") + "Error: " + e.message;
      history.pop();
    }
  } finally {
    controller = null;
    setBusy(false);
    refreshStatus();
  }
}

sendBtn.addEventListener("click", send);
stopBtn.addEventListener("click", () => controller && controller.abort());
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
});
$("new").addEventListener("click", () => {
  if (controller) controller.abort();
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
