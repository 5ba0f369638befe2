#!/usr/bin/env python3
"""Prompt-cache benchmark: time to first token for one long shared prefix,
cold (computed), from the RAM tier (a hit), and from the SSD tier after a
restart (the record files dropped from the page cache first, so they come
from the disk), with the restore's MB/s next to the disk's sequential read
rate measured in the same run on the same directory; how long a stream
that decodes meanwhile waits for a token at most while a restore runs; and
how long a burst of --burst requests with one new prefix takes to get every
first token, with the cache (which computes the prefix once) and without it
(each request computes it, as every request did before the engine shared
blocks computed in flight).

  python3 bench/prompt_cache_bench.py [--hearth build/hearth] [--model DIR]
      [--prefix 3000] [--dir /var/tmp/hearth-bench] [--threads N] [--kv-type f32|bf16]
      [--step-tokens N] [--burst N] [--json]

Without --model, a random-weight qwen3-0.6b checkpoint (MLX 4-bit) is made
with `hearth mkmodel`. Each TTFT is a /v1/completions request for one token
(the prompt is token ids, so nothing is tokenized); the best of --repeats.
--step-tokens is the server's: a restore reads that many tokens' blocks a step.
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

ap = argparse.ArgumentParser()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap.add_argument("--hearth", default=os.path.join(root, "build/hearth"))
ap.add_argument("--model")
ap.add_argument("--prefix", type=int, default=3000)
ap.add_argument("--dir", default="/var/tmp/hearth-prompt-cache-bench")
ap.add_argument("--threads")
ap.add_argument("--step-tokens")
ap.add_argument("--kv-type", default="f32")
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--burst", type=int, default=4)
ap.add_argument("--json", action="store_true")
a = ap.parse_args()


def log(*x):
    if not a.json:
        print(*x, file=sys.stderr, flush=True)


shutil.rmtree(a.dir, ignore_errors=True)
os.makedirs(a.dir)
model = a.model
if not model:
    model = os.path.join(a.dir, "qwen3-0.6b-mlx4")
    log("making a random-weight qwen3-0.6b (MLX 4-bit) checkpoint ...")
    subprocess.run([a.hearth, "mkmodel", "--arch", "qwen3", "--preset", "qwen3-0.6b", "--dtype", "bf16",
                    "--quant", "mlx4", "--out", model], check=True, stdout=subprocess.DEVNULL)
ssd = os.path.join(a.dir, "ssd")


class Server:
    def __init__(self, *extra):
        args = [a.hearth, "serve", "--model", model, "--port", "0", "--kv-type", a.kv_type, *extra]
        if a.threads:
            args += ["--threads", a.threads]
        if a.step_tokens:
            args += ["--step-tokens", a.step_tokens]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        self.url = re.search(r"listening on (http://\S+)", line).group(1)

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=3600))

    def stats(self):
        return json.load(urllib.request.urlopen(self.url + "/stats"))

    def ttft(self, prompt):
        t0 = time.perf_counter()
        r = self.post("/v1/completions", {"prompt": prompt, "max_tokens": 1, "temperature": 0})
        return time.perf_counter() - t0, r["usage"]["prompt_tokens_details"]["cached_tokens"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=600)


def drop_from_page_cache(path):
    for dirpath, _, files in os.walk(path):
        for f in files:
            fd = os.open(os.path.join(dirpath, f), os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def disk_read_rate(path, files=96, size=8 << 20):
    """Sequential reads of fresh files as large as KV blocks, dropped from the page cache, on one
    thread per core into buffers allocated once per file: bytes/s."""
    d = os.path.join(path, "read-rate")
    os.makedirs(d)
    data = os.urandom(size)
    for i in range(files):
        with open(os.path.join(d, str(i)), "wb") as out:
            out.write(data)
    drop_from_page_cache(d)

    def read(i, buf=None):  # one thread per core, as hearth's restore reads
        buf = bytearray(size)
        with open(os.path.join(d, str(i)), "rb", buffering=0) as inp:
            while inp.readinto(buf):
                pass

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as ex:
        list(ex.map(read, range(files)))
    rate = files * size / (time.perf_counter() - t0)
    shutil.rmtree(d)
    return rate


rng = random.Random(7)
prefixes = [[rng.randrange(1000, 100000) for _ in range(a.prefix)] for _ in range(a.repeats)]

log(f"cold: {a.repeats} distinct {a.prefix}-token prompts ...")
srv = Server("--ssd-cache", ssd)
cold = min(srv.ttft(p)[0] for p in prefixes)
log(f"RAM hit: the same prompts again ...")
ram = [srv.ttft(p) for p in prefixes]
ram_s = min(t for t, _ in ram)
assert all(c > 0 for _, c in ram), ram
flush = srv.post("/admin/cache/flush", {})
ssd_stats = srv.stats()["ssd_cache"]
srv.stop()

restores = []
for p in prefixes:  # one restart per prompt: each restore starts from a cold disk
    drop_from_page_cache(ssd)
    srv = Server("--ssd-cache", ssd)
    t, cached = srv.ttft(p)
    st = srv.stats()
    restores.append((t, cached, st["ssd_cache"]["restore_ms_total"], st["prompt_cache"]["entries"]))
    srv.stop()


def stall_during_restore(prompt):
    """A stream decodes while another request's prefix is restored from a cold disk: the longest gap
    between its tokens during the restore, and its median gap before it (seconds)."""
    drop_from_page_cache(ssd)
    srv = Server("--ssd-cache", ssd)
    body = {"prompt": [rng.randrange(1000, 100000) for _ in range(8)], "max_tokens": 2000, "temperature": 0, "stream": True}
    req = urllib.request.Request(srv.url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    times, started = [], concurrent.futures.Future()

    def read():
        with urllib.request.urlopen(req, timeout=3600) as r:
            for line in r:
                if line.startswith(b"data: {"):
                    times.append(time.perf_counter())
                    if len(times) == 20:
                        started.set_result(None)
                    if window[1] is not None and times[-1] > window[1]:
                        return

    window = [None, None]
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        reader = ex.submit(read)
        started.result(timeout=600)
        window[0] = time.perf_counter()
        srv.ttft(prompt)
        window[1] = time.perf_counter()
        reader.result(timeout=600)
    srv.stop()
    gaps = [b - a for a, b in zip(times, times[1:])]
    before = sorted(g for g, t in zip(gaps, times[1:]) if t < window[0])
    during = [g for g, t in zip(gaps, times[1:]) if window[0] <= t <= window[1] + max(gaps)]
    return max(during), before[len(before) // 2]


def burst(*extra):
    """--burst requests with one new prefix sent at once, each for one token: seconds until the last
    answer, and the prompt tokens the server computed."""
    srv = Server(*extra)
    prompt = [rng.randrange(1000, 100000) for _ in range(a.prefix)]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(a.burst) as ex:
        list(ex.map(lambda _: srv.ttft(prompt), range(a.burst)))
    took = time.perf_counter() - t0
    computed = srv.stats()["generation"]["prompt_tokens_total"]
    srv.stop()
    return took, computed


log(f"a burst of {a.burst} requests with one new prefix, with and without the prompt cache ...")
burst_shared, burst_off = burst(), burst("--prompt-cache", "0")

log("a stream decoding while a prefix is restored ...")
stall, itl = stall_during_restore(prefixes[0])
best = min(restores)
kv_bytes_per_token = ssd_stats["bytes"] / max(1, ssd_stats["entries"]) / 32
restored_bytes = best[1] * kv_bytes_per_token
restore_rate = restored_bytes / (best[2] / 1000)
disk = disk_read_rate(a.dir)

out = {
    "model": os.path.basename(model), "prefix_tokens": a.prefix, "kv_type": a.kv_type,
    "ttft_cold_s": cold, "ttft_ram_hit_s": ram_s, "ttft_ssd_restore_s": best[0],
    "cached_tokens_ram": ram[0][1], "cached_tokens_ssd": best[1],
    "ram_hit_vs_cold": ram_s / cold, "ssd_restore_speedup_vs_cold": cold / best[0],
    "restore_ms": best[2], "restored_bytes": restored_bytes, "restore_bytes_per_s": restore_rate,
    "disk_read_bytes_per_s": disk, "restore_vs_disk": restore_rate / disk, "flush": flush,
    "stream_itl_s": itl, "stream_longest_gap_during_restore_s": stall,
    "burst": a.burst, "burst_s": burst_shared[0], "burst_prompt_tokens_computed": burst_shared[1],
    "burst_cache_off_s": burst_off[0], "burst_cache_off_prompt_tokens_computed": burst_off[1],
}
if a.json:
    print(json.dumps(out, indent=1))
else:
    print(f"{out['model']}, {a.prefix}-token prefix, KV {a.kv_type}: "
          f"TTFT cold {cold:.3f} s, RAM hit {ram_s:.3f} s ({100 * ram_s / cold:.1f}% of cold), "
          f"SSD restore {best[0]:.3f} s ({cold / best[0]:.1f}x faster than cold)\n"
          f"restore read {restored_bytes / 1e6:.0f} MB in {best[2]:.0f} ms = {restore_rate / 1e6:.0f} MB/s; "
          f"disk sequential read {disk / 1e6:.0f} MB/s ({100 * restore_rate / disk:.0f}%)\n"
          f"a decoding stream: {1000 * itl:.0f} ms between tokens, {1000 * stall:.0f} ms at most while a prefix "
          f"was restored\n"
          f"{a.burst} requests with one new prefix at once: every first token in {burst_shared[0]:.3f} s, "
          f"{burst_shared[1]} prompt tokens computed; without the cache {burst_off[0]:.3f} s, {burst_off[1]} computed "
          f"({burst_off[0] / burst_shared[0]:.2f}x as long)")
shutil.rmtree(a.dir, ignore_errors=True)
