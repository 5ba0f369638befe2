#!/usr/bin/env python3
"""Speech-to-text speed: `hearth transcribe` on random-weight Whisper
checkpoints, and whisper.cpp's whisper-cli on the same weights in the same
run when one is given.

  python3 bench/whisper_bench.py [--hearth build/hearth] [--models tiny-f32,tiny-bf16,tiny-mlx4]
      [--clips 30,300] [--threads 2] [--rounds 2] [--sample-len 100]
      [--whisper-cli PATH [--whisper-quantize PATH]] [--dir /var/tmp/hearth-whisper-bench] [--json]

Models: tiny-f32, tiny-bf16, tiny-mlx4 (MLX 4-bit, g64, bf16 scales),
turbo-bf16 (large-v3-turbo, 1.6 GB). Clips: seconds of jfk.wav (11 s) repeated
and cut, 16 kHz mono. Every run decodes the same way: --language en (no
detection), --temperature 0 --no-fallback (one greedy decode per window), and
--sample-len tokens at most per window. Random weights never stop on their own
the way a real model does at the end of the speech, so the cap stands in for
the real length: 100 is about what a real model writes for 30 s of English
(150 words a minute, ~1.3 tokens a word, plus a timestamp pair per segment).

whisper-cli and whisper-quantize: `bash bench/whisper_cpp_build.sh` builds
them (whisper.cpp 1.9.1 from the npm package nodejs-whisper's sources).

hearth reports its own breakdown (`--timings`). whisper.cpp's comes from its
whisper_print_timings: encode = "encode time" per run; a decoder token is
one run of prompt, decode or batchd, its time those plus "sample time" (hearth's
decode time includes the prompt, the logit filters and sampling alike).
whisper.cpp gets F16 for BF16 (both 2 bytes a weight) and Q4_0
(whisper-quantize) for MLX 4-bit (both 4.5 bits a weight); not f32, whose
convolutions its CPU backend rejects (im2col asserts F16 kernels). Otherwise
it runs with its defaults (flash attention on), greedy (-bs 1 -bo 1), no
fallback (-nf); it has no sample-length cap, so its own token counts are
reported.

The engines alternate round by round (hearth, whisper.cpp, hearth, ...) so a
noisy neighbour slows both alike; the best round of each is reported.
RTF here is audio seconds per wall second (higher is faster); "RTF @cap" is
the same computed for a fixed work of one encoder run and --sample-len tokens
per 30 s window, so the two engines compare on equal work.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import wave

ap = argparse.ArgumentParser()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap.add_argument("--hearth", default=os.path.join(root, "build/hearth"))
ap.add_argument("--models", default="tiny-f32,tiny-bf16,tiny-mlx4")
ap.add_argument("--clips", default="30,300")
ap.add_argument("--threads", default="2")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--sample-len", type=int, default=100)
ap.add_argument("--whisper-cli")
ap.add_argument("--whisper-quantize")
ap.add_argument("--audio", default=os.path.join(root, "..", "shared", "audio"))
ap.add_argument("--dir", default="/var/tmp/hearth-whisper-bench")
ap.add_argument("--json", action="store_true")
a = ap.parse_args()

MODELS = {  # name -> (preset, mkmodel options, whisper.cpp format, the checkpoint it comes from)
    "tiny-f32": ("tiny", ["--dtype", "f32"], None, None),
    "tiny-bf16": ("tiny", ["--dtype", "bf16"], "f16", "tiny-bf16"),
    "tiny-mlx4": ("tiny", ["--dtype", "bf16", "--layout", "mlx", "--quant", "mlx4"], "q4_0",
                  "tiny-bf16"),
    "turbo-bf16": ("large-v3-turbo", ["--dtype", "bf16"], "f16", "turbo-bf16"),
}


def log(*x):
    print(*x, file=sys.stderr, flush=True)


def run(cmd):
    t0 = time.monotonic()
    # Random weights write any bytes: a transcript need not be valid UTF-8.
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return p, wall


def make_clip(seconds):
    path = os.path.join(a.dir, f"jfk-{seconds}s.wav")
    if not os.path.exists(path):
        with wave.open(os.path.join(a.audio, "jfk.wav")) as w:
            assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16000)
            frames = w.readframes(w.getnframes())
        want = seconds * 16000 * 2
        with wave.open(path, "wb") as out:
            out.setnchannels(1), out.setsampwidth(2), out.setframerate(16000)
            out.writeframes((frames * (want // len(frames) + 1))[:want])
    return path


def mkmodel(name):
    preset, options, _, _ = MODELS[name]
    out = os.path.join(a.dir, name)
    if not os.path.exists(os.path.join(out, "config.json")):
        log(f"mkmodel {name} ...")
        run([a.hearth, "mkmodel", "--arch", "whisper", "--preset", preset, "--tokenizer",
             os.path.join(a.audio, "multilingual.tiktoken"), "--out", out, *options])
    return out


def make_model(name):
    """hearth's checkpoint, and whisper.cpp's file of the same seed's weights."""
    _, _, ggml_type, source = MODELS[name]
    hf = mkmodel(name)
    if not a.whisper_cli or not ggml_type:
        return hf, None
    ggml = os.path.join(a.dir, f"{source}-ggml-{ggml_type}.bin")
    if not os.path.exists(ggml):
        convert = os.path.join(root, "bench", "whisper_to_ggml.py")
        filters = os.path.join(a.audio, "mel_filters.npz")
        if ggml_type == "q4_0":
            if not a.whisper_quantize:
                sys.exit("--whisper-quantize is needed for the Q4_0 file")
            f16 = os.path.join(a.dir, f"{source}-ggml-f16.bin")
            if not os.path.exists(f16):
                run([convert, mkmodel(source), filters, f16, "f16"])
            run([a.whisper_quantize, f16, ggml, "q4_0"])
        else:
            run([convert, mkmodel(source), filters, ggml, ggml_type])
    return hf, ggml


def hearth(model, clip, threads):
    p, wall = run([a.hearth, "transcribe", clip, "--model", model, "--language", "en",
                   "--temperature", "0", "--no-fallback", "--sample-len", str(a.sample_len),
                   "--threads", str(threads), "--timings"])
    t = json.loads([l for l in p.stderr.splitlines() if l.startswith("{")][-1])
    return {"load_ms": t["load_ms"], "encode_ms": t["encoder_ms"] / t["windows"],
            "token_ms": t["decoder_ms"] / max(1, t["tokens"]), "windows": t["windows"],
            "tokens": t["tokens"], "rtf": t["audio_s"] / (t["transcribe_ms"] / 1000),
            "wall_s": wall}


def whisper_cpp(model, clip, threads, seconds):
    p, wall = run([a.whisper_cli, "-m", model, "-f", clip, "-t", str(threads), "-l", "en",
                   "-tp", "0", "-nf", "-bs", "1", "-bo", "1"])

    def timing(what):  # (ms, runs)
        m = re.search(rf"{what} time =\s*([\d.]+) ms(?: /\s*(\d+) runs)?", p.stderr)
        if not m:
            sys.exit(f"no '{what} time' in whisper-cli's output:\n{p.stderr[-2000:]}")
        return float(m.group(1)), int(m.group(2) or 0)

    encode_ms, windows = timing("encode")
    steps = [timing(w) for w in ("prompt", "decode", "batchd")]
    tokens = sum(n for _, n in steps)
    decode_ms = sum(ms for ms, _ in steps) + timing("sample")[0]
    total_ms, _ = timing("total")
    load_ms, _ = timing("load")
    return {"load_ms": load_ms, "encode_ms": encode_ms / max(1, windows),
            "token_ms": decode_ms / max(1, tokens), "windows": windows, "tokens": tokens,
            "rtf": seconds / ((total_ms - load_ms) / 1000), "wall_s": wall}


def rtf_at_cap(r):
    return 30 / ((r["encode_ms"] + a.sample_len * r["token_ms"]) / 1000)


os.makedirs(a.dir, exist_ok=True)
clips = {int(s): make_clip(int(s)) for s in a.clips.split(",")}
rows = []
for name in a.models.split(","):
    hf, ggml = make_model(name)
    for threads in [int(t) for t in a.threads.split(",")]:
        for seconds, clip in clips.items():
            results = {"hearth": [], "whisper.cpp": []}
            for _ in range(a.rounds):
                results["hearth"].append(hearth(hf, clip, threads))
                if ggml:
                    results["whisper.cpp"].append(whisper_cpp(ggml, clip, threads, seconds))
            for engine, rs in results.items():
                if not rs:
                    continue
                best = max(rs, key=lambda r: r["rtf"])
                row = {"engine": engine, "model": name, "threads": threads, "clip_s": seconds,
                       **best, "rtf_at_cap": rtf_at_cap(best), "rounds": len(rs)}
                rows.append(row)
                log(json.dumps(row))

if a.json:
    print(json.dumps(rows, indent=1))
else:
    # x: hearth's RTF @cap over whisper.cpp's on the same model, threads and clip.
    cap = {(r["engine"], r["model"], r["threads"], r["clip_s"]): r["rtf_at_cap"] for r in rows}
    print("| engine | model | threads | clip | load ms | encode ms/window | decode ms/token "
          "| windows | tokens | RTF | RTF @cap | x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        other = cap.get(("whisper.cpp", r["model"], r["threads"], r["clip_s"]))
        x = f"{r['rtf_at_cap'] / other:.2f}" if r["engine"] == "hearth" and other else ""
        print(f"| {r['engine']} | {r['model']} | {r['threads']} | {r['clip_s']} s "
              f"| {r['load_ms']:.0f} | {r['encode_ms']:.0f} | {r['token_ms']:.2f} | {r['windows']} "
              f"| {r['tokens']} | {r['rtf']:.1f} | {r['rtf_at_cap']:.1f} | {x} |")
