#!/usr/bin/python3
"""hearth's word timestamps against openai-whisper's timing.py in NumPy.

    /usr/bin/python3 tests/numerics/test_whisper_words.py --hearth build/hearth [-v]

On a random-weight tiny checkpoint (`hearth mkmodel --arch whisper`), hearth
transcribes jfk.wav with --word-timestamps (greedy, no fallback, English).
For each window it decoded, timing.py's add_word_timestamps is computed here
from hearth's tokens and segment times, with the cross-attention of the
alignment heads from the independent NumPy Whisper (whisper_reference.py)
over the same log-mel (`hearth mel`), and with the DTW, median filter, word
split and punctuation rules written here from openai-whisper's Python. The
words, their times and probabilities must agree.

The last line is "whisper words: N passed, M failed".
"""

import base64
import json
import os
import string
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AUDIO = os.path.join(os.path.dirname(ROOT), "shared", "audio")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import Failure, Tests, check, crashed, run  # noqa: E402
from test_whisper import special_tokens  # noqa: E402
from whisper_reference import Whisper  # noqa: E402

N_FRAMES = 3000
PREPEND = "\"'“¿([{-"
APPEND = "\"'.。,，!！?？:：”)]}、"


class Vocab:
    """decode_with_timestamps for text tokens and <|endoftext|>, from the rank file."""

    def __init__(self, tiktoken_file, eot):
        self.bytes = {}
        with open(tiktoken_file, "rb") as f:
            for line in f:
                if line.strip():
                    token, rank = line.split()
                    self.bytes[int(rank)] = base64.b64decode(token)
        self.eot = eot

    def decode(self, tokens):
        out, text = "", b""
        for t in tokens:
            if t >= self.eot:
                out += text.decode("utf-8", errors="replace") + "<|endoftext|>"
                text = b""
            else:
                text += self.bytes[t]
        return out + text.decode("utf-8", errors="replace")

    def split_on_unicode(self, tokens):
        full = self.decode(tokens)
        words, word_tokens, current, offset = [], [], [], 0
        for t in tokens:
            current.append(t)
            decoded = self.decode(current)
            if "\ufffd" not in decoded or full[offset + decoded.index("\ufffd")] == "\ufffd":
                words.append(decoded)
                word_tokens.append(current)
                current = []
                offset += len(decoded)
        return words, word_tokens

    def split_on_spaces(self, tokens):
        words, word_tokens = [], []
        for sub, sub_tokens in zip(*self.split_on_unicode(tokens)):
            if sub_tokens[0] >= self.eot or sub.startswith(" ") or sub.strip() in string.punctuation \
                    or not words:
                words.append(sub)
                word_tokens.append(sub_tokens)
            else:
                words[-1] += sub
                word_tokens[-1].extend(sub_tokens)
        return words, word_tokens


def median_filter(x, width):
    pad = width // 2
    if x.shape[-1] <= pad:
        return x
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.sort(windows, axis=-1)[..., pad]


def dtw(x):
    n, m = x.shape
    cost = np.full((n + 1, m + 1), np.inf, dtype=np.float32)
    trace = -np.ones((n + 1, m + 1))
    cost[0, 0] = 0
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
            if c0 < c1 and c0 < c2:
                c, t = c0, 0
            elif c1 < c0 and c1 < c2:
                c, t = c1, 1
            else:
                c, t = c2, 2
            cost[i, j] = x[i - 1, j - 1] + c
            trace[i, j] = t
    trace[0, :] = 2
    trace[:, 0] = 1
    i, j, path = n, m, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        t = trace[i, j]
        i, j = (i - 1, j - 1) if t == 0 else (i - 1, j) if t == 1 else (i, j - 1)
    return np.array(path[::-1]).T


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def find_alignment(ref, features, heads, ids, vocab, text_tokens, num_frames):
    if not text_tokens:
        return []
    sot = [ids["sot"], ids["en"], ids["transcribe"]]
    tokens = sot + [ids["no_timestamps"]] + text_tokens + [ids["eot"]]
    qk, logits = ref.cross_attention(tokens, features)
    probs = softmax(logits[len(sot):, : ids["eot"]])
    token_probs = probs[np.arange(len(text_tokens)), text_tokens]
    w = np.stack([qk[layer][head] for layer, head in heads])[:, :, : num_frames // 2]
    w = softmax(w)
    w = (w - w.mean(-2, keepdims=True)) / w.std(-2, keepdims=True)
    w = median_filter(w, 7)
    matrix = w.mean(0)[len(sot) : -1]
    text_idx, time_idx = dtw(-matrix)
    words, word_tokens = vocab.split_on_spaces(text_tokens + [ids["eot"]])
    if len(word_tokens) <= 1:
        return []
    bounds = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    jumps = np.pad(np.diff(text_idx), (1, 0), constant_values=1).astype(bool)
    jump_times = time_idx[jumps] / 50
    return [dict(word=words[k], tokens=word_tokens[k], start=jump_times[bounds[k]],
                 end=jump_times[bounds[k + 1]], probability=np.mean(token_probs[bounds[k]:bounds[k + 1]]))
            for k in range(len(bounds) - 1)]


def merge_punctuations(a):
    i, j = len(a) - 2, len(a) - 1
    while i >= 0:
        p, f = a[i], a[j]
        if p["word"].startswith(" ") and p["word"].strip() in PREPEND:
            f["word"], f["tokens"] = p["word"] + f["word"], p["tokens"] + f["tokens"]
            p["word"], p["tokens"] = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(a):
        p, f = a[i], a[j]
        if not p["word"].endswith(" ") and f["word"] in APPEND:
            p["word"], p["tokens"] = p["word"] + f["word"], p["tokens"] + f["tokens"]
            f["word"], f["tokens"] = "", []
        else:
            i = j
        j += 1


def add_word_timestamps(segments, align, eot, last_speech):
    """timing.py's add_word_timestamps over `align` (find_alignment's words)."""
    per_segment = [[t for t in s["tokens"] if t < eot] for s in segments]
    durations = np.array([t["end"] - t["start"] for t in align])
    durations = durations[durations.nonzero()]
    median = min(0.7, float(np.median(durations)) if len(durations) else 0.0)
    longest = median * 2
    if len(durations):
        for i in range(1, len(align)):
            if align[i]["end"] - align[i]["start"] > longest:
                if align[i]["word"] in ".。!！?？":
                    align[i]["end"] = align[i]["start"] + longest
                elif align[i - 1]["word"] in ".。!！?？":
                    align[i]["start"] = align[i]["end"] - longest
    merge_punctuations(align)
    offset = segments[0]["seek"] * 160 / 16000
    k = 0
    for s, text in zip(segments, per_segment):
        saved, words = 0, []
        while k < len(align) and saved < len(text):
            t = align[k]
            if t["word"]:
                words.append(dict(word=t["word"], start=round(offset + t["start"], 2),
                                  end=round(offset + t["end"], 2), probability=t["probability"]))
            saved += len(t["tokens"])
            k += 1
        if words:
            if words[0]["end"] - last_speech > median * 4 and (
                    words[0]["end"] - words[0]["start"] > longest
                    or (len(words) > 1 and words[1]["end"] - words[0]["start"] > longest * 2)):
                if len(words) > 1 and words[1]["end"] - words[1]["start"] > longest:
                    boundary = max(words[1]["end"] / 2, words[1]["end"] - longest)
                    words[0]["end"] = words[1]["start"] = boundary
                words[0]["start"] = max(0, words[0]["end"] - longest)
            if s["start"] < words[0]["end"] and s["start"] - 0.5 > words[0]["start"]:
                words[0]["start"] = max(0, min(words[0]["end"] - median, s["start"]))
            else:
                s["start"] = words[0]["start"]
            if s["end"] > words[-1]["start"] and s["end"] + 0.5 < words[-1]["end"]:
                words[-1]["end"] = max(words[-1]["start"] + median, s["end"])
            else:
                s["end"] = words[-1]["end"]
            last_speech = s["end"]
        s["words"] = words


class Suite(Tests):
    def __init__(self, args):
        self.args = args
        self.hearth = os.path.abspath(args.hearth)
        self.tmp = tempfile.mkdtemp(prefix="hearth-words-")

    def run_all(self):
        self.test("whisper tiny f32: word timestamps of jfk.wav vs NumPy timing.py", self.words_vs_numpy)

    def words_vs_numpy(self, notes):
        model_dir = os.path.join(self.tmp, "tiny")
        p = run([self.hearth, "mkmodel", "--arch", "whisper", "--preset", "tiny", "--seed", "3",
                 "--tokenizer", os.path.join(AUDIO, "multilingual.tiktoken"), "--out", model_dir], timeout=600)
        check(p.returncode == 0, f"mkmodel failed: {p.err.strip()}")
        wav = os.path.join(AUDIO, "jfk.wav")
        mel_path = os.path.join(self.tmp, "mel.npy")
        p = run([self.hearth, "mel", wav, "--padding", str(N_FRAMES * 160), "--out", mel_path])
        check(p.returncode == 0, f"hearth mel failed: {p.err.strip()}")
        p = run([self.hearth, "transcribe", wav, "--model", model_dir, "--word-timestamps", "--format",
                 "verbose_json", "--temperature", "0", "--no-fallback", "--language", "en"], timeout=900)
        check(not crashed(p) and p.returncode == 0, f"hearth transcribe failed: {p.err.strip()[-400:]}")
        out = json.loads(p.out)

        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(model_dir, "generation_config.json")) as f:
            heads = json.load(f).get("alignment_heads") or [
                [layer, h] for layer in range(cfg["decoder_layers"] // 2, cfg["decoder_layers"])
                for h in range(cfg["decoder_attention_heads"])]
        tiktoken = os.path.join(model_dir, "multilingual.tiktoken")
        ids = special_tokens(tiktoken, cfg["vocab_size"])
        vocab = Vocab(tiktoken, ids["eot"])
        ts = ids["timestamp_begin"]
        mel = np.load(mel_path).astype(np.float64)
        content = mel.shape[1] - N_FRAMES
        ref = Whisper.load(model_dir)

        windows = {}
        for s in out["segments"]:
            windows.setdefault(s["seek"], []).append(s)
        check(out["words"] == [dict(word=w["word"].lstrip(" "), start=w["start"], end=w["end"])
                               for s in out["segments"] for w in s["words"]], "top-level words differ")
        last_speech, checked, worst_p = 0.0, 0, 0.0
        for seek, segs in sorted(windows.items()):
            if any(not s["tokens"] for s in segs):
                notes.append(f"window at {seek}: a segment was cleared (its tokens are not in the output)")
                last_speech = next((w["end"] for s in reversed(segs) for w in reversed(s["words"])),
                                   segs[-1]["end"])
                continue
            size = min(N_FRAMES, content - seek)
            window = np.zeros((mel.shape[0], N_FRAMES))
            window[:, :size] = mel[:, seek:seek + size]
            features = ref.encode(window)
            text = [t for s in segs for t in s["tokens"] if t < ids["eot"]]
            align = find_alignment(ref, features, heads, ids, vocab, text, size)
            # The segments' times before add_word_timestamps, from their tokens:
            # cut at timestamp pairs, or (one segment) the window up to its last
            # timestamp. A single [<|a|> ... <|b|>] segment may be either.
            offset = seek / 100
            readings = []
            if len(segs) == 1:
                stamps = [t for t in segs[0]["tokens"] if t >= ts]
                end = offset + ((stamps[-1] - ts) * 0.02 if stamps and stamps[-1] != ts else size / 100)
                readings.append([(offset, end)])
            if all(s["tokens"][0] >= ts and s["tokens"][-1] >= ts for s in segs):
                readings.append([(offset + (s["tokens"][0] - ts) * 0.02, offset + (s["tokens"][-1] - ts) * 0.02)
                                 for s in segs])
            check(readings, f"window at {seek}: segments neither cut at timestamps nor whole")
            failures = []
            for times in readings:
                mine = [dict(seek=seek, tokens=s["tokens"], start=a, end=b) for s, (a, b) in zip(segs, times)]
                add_word_timestamps(mine, [dict(w) for w in align], ids["eot"], last_speech)
                got = [[(w["word"], w["start"], w["end"]) for w in s["words"]] + [(s["start"], s["end"])]
                       for s in segs]
                want = [[(w["word"], w["start"], w["end"]) for w in s["words"]] + [(s["start"], s["end"])]
                        for s in mine]
                if all(len(g) == len(w) and all(a[0] == b[0] and np.allclose(a[1:], b[1:], atol=1e-6)
                                                for a, b in zip(g, w)) for g, w in zip(got, want)):
                    break
                failures.append(f"window at {seek}: hearth {got}, timing.py {want}")
            else:
                raise Failure("; ".join(failures))
            for s, expected in zip(segs, mine):
                for a, b in zip(s["words"], expected["words"]):
                    worst_p = max(worst_p, abs(a["probability"] - b["probability"]))
                checked += len(s["words"])
            last_speech = next((w["end"] for s in reversed(mine) for w in reversed(s["words"])),
                               mine[-1]["end"])
        check(checked > 0, "no window could be checked")
        check(worst_p < 1e-3, f"max |probability difference| {worst_p:.3g}")
        notes.append(f"{checked} words in {len(windows)} windows, max |probability difference| {worst_p:.3g}")


if __name__ == "__main__":
    sys.exit(harness.main(Suite, "hearth's word timestamps against NumPy timing.py", "whisper words"))
