#!/usr/bin/python3
"""hearth's Silero VAD against an independent NumPy forward (vad_reference.py).

    /usr/bin/python3 tests/numerics/test_vad.py --hearth build/hearth

On the shared silero-v6.2.0-ggml.bin and these clips: jfk.wav, jfk.wav cut to
a length that is not a whole number of windows, 5 s of silence, 5 s of white
noise at -46 dBFS RMS (uniform, +-0.0087), and speech-silence-speech (jfk's
first 4 s, 3 s of zeros, its next 4 s), `hearth vad --probabilities` must give:
  * one probability per 512-sample window, each within 1e-4 of the reference.
    The reference runs in float64; hearth in float32 with the same f16 weights
    widened exactly, so they differ only by float32 rounding: sums of at most
    387 products in the front end and encoder (relative error ~1e-6 of the
    magnitudes), carried through the LSTM over hundreds of windows with
    contracting gates. Measured: at most 6.3e-7. Any error in the definition
    (padding, context, framing, strides, gate order) moves probabilities by
    1e-2 or more (whisper.cpp's forward, without the 64-sample context, differs
    by up to 0.2 on jfk.wav).
  * the spans the reference rules (silero's get_speech_timestamps as
    whisper.cpp applies them) give on hearth's own probabilities, to 1e-9 s,
    also with other options (threshold 0.7, 500 ms minimum speech, 300 ms
    minimum silence, 100 ms padding).
  * and what a listener would say: jfk.wav's spans run from before 0.5 s to
    after 10.3 s, cover at least 70% of 0.3-10.5 s (the speech, with three
    pauses between phrases: 76% measured) and nothing before 0.2 s; silence
    and noise have no span; speech-silence-speech has none in the middle of
    the gap.

The last line is "vad: N passed, M failed"; the exit status is 1 when
anything failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import Checks, float_wav, shared_audio  # noqa: E402
import vad_reference  # noqa: E402

TOLERANCE = 1e-4
RATE = 16000


def covered(spans, a, b):
    """Seconds of [a, b] inside the spans."""
    return sum(max(0.0, min(b, e) - max(a, s)) for s, e in spans)


class Suite(Checks):
    def __init__(self, hearth, model, tmp):
        self.hearth, self.model, self.tmp = hearth, model, tmp
        self.reference = vad_reference.SileroVad(model)

    def vad(self, path, *options):
        p = subprocess.run([self.hearth, "vad", path, "--model", self.model, "--probabilities",
                            *options], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"hearth vad exited {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout)

    def clip(self, name, samples, options=()):
        """Probabilities and spans of one clip against the reference; returns the spans."""
        path = os.path.join(self.tmp, "clip.wav")
        float_wav(path, samples)
        got = self.vad(path, *options)
        probs = np.asarray(got["probabilities"], dtype=np.float64)
        want = self.reference.probabilities(np.asarray(samples, dtype=np.float32))
        if probs.shape != want.shape:
            self.check(f"{name} probabilities", False, f"{probs.shape[0]} windows, want {want.shape[0]}")
        else:
            diff = float(np.abs(probs - want).max()) if probs.size else 0.0
            self.check(f"{name} probabilities", diff <= TOLERANCE,
                       f"{probs.size} windows, max abs diff {diff:.2e}")
        names = {"--threshold": "threshold", "--min-speech-ms": "min_speech_ms",
                 "--min-silence-ms": "min_silence_ms", "--speech-pad-ms": "speech_pad_ms"}
        kw = {names[options[i]]: (float if options[i] == "--threshold" else int)(options[i + 1])
              for i in range(0, len(options), 2)}
        spans = [(s["start"], s["end"]) for s in got["spans"]]
        rule = vad_reference.speech_spans(probs.astype(np.float32), len(samples), **kw)
        same = len(spans) == len(rule) and all(
            abs(a - c) <= 1e-9 and abs(b - d) <= 1e-9 for (a, b), (c, d) in zip(spans, rule))
        shown = ", ".join(f"{a:.2f}-{b:.2f}" for a, b in spans) or "none"
        self.check(f"{name} spans {' '.join(options)}".rstrip(), same,
                   shown if same else f"{shown}; the rules give {rule}")
        return spans


def main():
    ap = argparse.ArgumentParser(description="hearth's Silero VAD against NumPy")
    ap.add_argument("--hearth", required=True)
    args = ap.parse_args()
    audio_dir = shared_audio("silero-v6.2.0-ggml.bin")
    if audio_dir is None:
        print("vad: shared/audio not present; 0 passed, 0 failed")
        return 0
    with wave.open(os.path.join(audio_dir, "jfk.wav")) as w:
        jfk = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        s = Suite(os.path.abspath(args.hearth), os.path.join(audio_dir, "silero-v6.2.0-ggml.bin"), tmp)

        spans = s.clip("jfk.wav", jfk)
        speech = covered(spans, 0.3, 10.5) / 10.2
        ends = bool(spans) and spans[0][0] < 0.5 and spans[-1][1] > 10.3
        s.check("jfk.wav is speech", ends and speech >= 0.7 and covered(spans, 0.0, 0.2) == 0.0,
                f"{speech:.0%} of 0.3-10.5 s inside the spans")
        s.clip("jfk.wav", jfk, ("--threshold", "0.7", "--min-speech-ms", "500",
                                "--min-silence-ms", "300", "--speech-pad-ms", "100"))
        s.clip("jfk.wav cut to 100037 samples", jfk[:100037])

        silence = np.zeros(5 * RATE, dtype=np.float32)
        noise = rng.uniform(-0.0087, 0.0087, 5 * RATE).astype(np.float32)
        for name, x in (("silence", silence), ("white noise -46 dBFS", noise)):
            spans = s.clip(name, x)
            s.check(f"{name} is not speech", not spans, f"{len(spans)} spans")

        gap = np.concatenate([jfk[:4 * RATE], np.zeros(3 * RATE, dtype=np.float32),
                              jfk[4 * RATE:8 * RATE]])
        spans = s.clip("speech, 3 s silence, speech", gap)
        s.check("the silence between is not speech", covered(spans, 4.5, 6.5) == 0.0 and len(spans) >= 2,
                f"{covered(spans, 4.5, 6.5):.2f} s of 4.5-6.5 s inside {len(spans)} spans")
    print(f"vad: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
