#!/usr/bin/env python3
"""Transcription sharing the cores with chat generation: one server runs the
chat model and a Whisper model beside it (--whisper-model), each with its own
kernel thread pool. Measures, per --threads setting:

  (a) chat decode tokens/s of one streaming /v1/chat/completions alone,
  (b) the same while a /v1/audio/transcriptions of the clip runs,
  (c) the transcription's wall time alone,
  (d) the same while the chat request generates.

  python3 bench/sharing_bench.py --model CHAT_DIR --whisper-model WHISPER_DIR --clip 30s.wav
      [--hearth build/hearth] [--threads 2,1] [--rounds 2] [--max-tokens 200]

In (b)/(d) the chat request starts first; the transcription is sent once its
first token arrives, and the chat stream is closed (cancelled) when the
transcription returns, so the two overlap the whole time. (b) counts only the
chunks that arrived during the transcription. Tokens/s = streamed content
chunks per second between the first and the last (one chunk per token unless
the detokenizer holds back a partial character). Rounds alternate alone and
together so a noisy neighbour slows both alike; every round is printed, and
the table gives min-max.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import threading
import time

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                             formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap.add_argument("--hearth", default=os.path.join(root, "build/hearth"))
ap.add_argument("--model", required=True, help="chat model directory")
ap.add_argument("--whisper-model", required=True)
ap.add_argument("--clip", required=True, help="16 kHz WAV to transcribe")
ap.add_argument("--threads", default="2", help="comma-separated --threads values, one server each")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--max-tokens", type=int, default=200, help="chat tokens when alone")
ap.add_argument("--ctx-size", type=int, default=4096)
# One decode per window: at 0 a random-weight model fails every fallback check and each window is
# decoded at all six temperatures. Sampling is seeded, so each run does the same work.
ap.add_argument("--temperature", default="0.2", help="the transcription's temperature")
a = ap.parse_args()
audio = open(a.clip, "rb").read()


def start_server(threads):
    p = subprocess.Popen([a.hearth, "serve", "--model", a.model, "--whisper-model", a.whisper_model,
                          "--whisper-resident", "--port", "0", "--threads", str(threads),
                          "--ctx-size", str(a.ctx_size)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:  # "hearth serve: listening on http://127.0.0.1:PORT (...)"
        if m := re.search(r"listening on http://[^:]+:(\d+)", line):
            return p, int(m.group(1))
    raise SystemExit("the server exited before listening")


def chat(port, max_tokens, stop=None, first=None):
    """Streams one chat completion; returns the arrival times of its content
    chunks. stop: an Event that closes the stream early; first: an Event set
    at the first chunk."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"messages": [{"role": "user", "content": "Tell me a long story."}],
            "max_tokens": max_tokens, "temperature": 0, "stream": True}
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    times = []
    for line in r:
        if stop is not None and stop.is_set():
            break
        if not line.startswith(b"data: {"):
            continue
        choices = json.loads(line[6:]).get("choices") or [{}]
        if choices[0].get("delta", {}).get("content"):
            times.append(time.monotonic())
            if first is not None:
                first.set()
    c.close()  # closing mid-stream cancels the generation
    return times


def transcribe(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.monotonic()
    c.request("POST", f"/v1/audio/transcriptions?language=en&temperature={a.temperature}", audio, {"Content-Type": "audio/wav"})
    r = c.getresponse()
    text = json.loads(r.read()).get("text", "")
    c.close()
    return time.monotonic() - t0, text


def rate(times):
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else float("nan")


def together(port):
    stop, first, out = threading.Event(), threading.Event(), {}
    t = threading.Thread(target=lambda: out.setdefault("times", chat(port, 100000, stop, first)))
    t.start()
    first.wait()
    t0 = time.monotonic()
    seconds, text = transcribe(port)
    t1 = time.monotonic()
    stop.set()
    t.join()
    return rate([x for x in out["times"] if t0 <= x <= t1]), seconds, text


rows = []
for threads in [int(x) for x in a.threads.split(",")]:
    server, port = start_server(threads)
    try:
        chat(port, 8), transcribe(port)  # warm up: loads, first-touch of the weights
        r = {"a": [], "b": [], "c": [], "d": []}
        for i in range(a.rounds):
            r["a"].append(rate(chat(port, a.max_tokens)))
            seconds, alone_text = transcribe(port)
            r["c"].append(seconds)
            tok_s, seconds, text = together(port)
            r["b"].append(tok_s), r["d"].append(seconds)
            print(f"threads {threads} round {i + 1}: chat {r['a'][-1]:.1f} -> {tok_s:.1f} tok/s, "
                  f"transcription {r['c'][-1]:.2f} -> {seconds:.2f} s"
                  f"{'' if text == alone_text else ' (text differs from alone)'}", flush=True)
        rows.append((threads, r))
    finally:
        server.terminate()
        server.wait()


def span(xs, fmt):
    return f"{fmt.format(min(xs))}-{fmt.format(max(xs))}" if len(xs) > 1 else fmt.format(xs[0])


print("\n| --threads | (a) chat tok/s alone | (b) chat tok/s with transcription | b/a "
      "| (c) transcription s alone | (d) transcription s with chat | d/c |")
print("|---|---|---|---|---|---|---|")
for threads, r in rows:
    mean = lambda k: sum(r[k]) / len(r[k])
    print(f"| {threads} | {span(r['a'], '{:.1f}')} | {span(r['b'], '{:.1f}')} | {mean('b') / mean('a'):.2f} "
          f"| {span(r['c'], '{:.2f}')} | {span(r['d'], '{:.2f}')} | {mean('d') / mean('c'):.2f} |")
