#!/usr/bin/python3
"""hearth's audio input against an independent NumPy reference.

    /usr/bin/python3 tests/numerics/test_audio.py --hearth build/hearth

What is checked:
  * `hearth mel --filters N` equals openai-whisper's mel_filters.npz (mel_80,
    mel_128) to 1e-6 of the largest weight: both are librosa's Slaney
    filterbank computed in float64 and rounded to float32.
  * `hearth mel --samples` on jfk.wav equals Python's `wave` module's int16
    samples / 32768, exactly.
  * `hearth mel` equals a NumPy log-mel written from whisper/audio.py's
    definition (np.pad reflect, its own periodic Hann window, np.fft.rfft in
    float64, the npz filters) on jfk.wav (padding 0 and 480000, 80 and 128
    mels), a sine, white noise, silence, and clips of 150 and 180 samples.
    Tolerance 1e-4 on the scaled log-mel, (log10 + 4) / 4: hearth's FFT and
    filter sums run in float32 (relative error ~1e-6 of a frame's largest
    bin). A band at the clamp floor, 8 decades below the loudest, can be
    1e-4 of its frame's amplitude, so float32 noise of 1e-7 of the amplitude
    changes its power by ~1e-3 relative, 4e-5 in scaled units; 1e-4 bounds
    that, while any error in the definition (window, padding, framing,
    filters, clamp) moves values by 1e-2 or more.

The last line is "audio: N passed, M failed"; the exit status is 1 when
anything failed.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Checks, float_wav, shared_audio  # noqa: E402
TOLERANCE = 1e-4


def reference_log_mel(audio, filters, padding):
    x = np.concatenate([np.asarray(audio, dtype=np.float64), np.zeros(padding)])
    frames = len(x) // 160  # 1 + len // 160 STFT frames, less the last (stft[..., :-1])
    if frames == 0:
        return np.zeros((filters.shape[0], 0))
    x = np.pad(x, 200, mode="reflect")  # torch.stft(center=True)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # periodic Hann
    index = np.arange(frames)[:, None] * 160 + np.arange(400)[None, :]
    power = np.abs(np.fft.rfft(x[index] * window, axis=1)) ** 2
    log = np.log10(np.maximum(filters.astype(np.float64) @ power.T, 1e-10))
    log = np.maximum(log, log.max() - 8.0)
    return (log + 4.0) / 4.0


class Suite(Checks):
    def __init__(self, hearth, tmp):
        self.hearth, self.tmp = hearth, tmp

    def npy(self, *args):
        out = os.path.join(self.tmp, "out.npy")
        subprocess.run([self.hearth, "mel", *args, "--out", out], check=True)
        return np.load(out)

    def mel(self, name, path, audio, filters, padding):
        n_mels = filters.shape[0]
        got = self.npy(path, "--n-mels", str(n_mels), "--padding", str(padding))
        want = reference_log_mel(audio, filters, padding)
        if got.shape != want.shape or got.dtype != np.float32:
            self.check(name, False, f"shape {got.shape} {got.dtype}, want {want.shape} float32")
            return
        diff = float(np.abs(got - want).max()) if got.size else 0.0
        self.check(name, diff <= TOLERANCE, f"shape {got.shape}, max abs diff {diff:.2e}")


def main():
    ap = argparse.ArgumentParser(description="hearth audio input against NumPy")
    ap.add_argument("--hearth", required=True)
    args = ap.parse_args()
    audio_dir = shared_audio()
    if audio_dir is None:
        print("audio: shared/audio not present; 0 passed, 0 failed")
        return 0
    npz = np.load(os.path.join(audio_dir, "mel_filters.npz"))
    filters = {80: npz["mel_80"], 128: npz["mel_128"]}
    jfk = os.path.join(audio_dir, "jfk.wav")
    with tempfile.TemporaryDirectory() as tmp:
        s = Suite(os.path.abspath(args.hearth), tmp)
        for n, want in filters.items():
            got = s.npy("--filters", str(n))
            rel = float(np.abs(got - want).max() / np.abs(want).max()) if got.shape == want.shape else np.inf
            s.check(f"filters {n}", rel < 1e-6, f"shape {got.shape}, max abs diff / max {rel:.2e}")

        with wave.open(jfk) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        samples = s.npy(jfk, "--samples")
        want = pcm.astype(np.float32) / np.float32(32768)
        s.check("samples jfk.wav", samples.dtype == np.float32 and np.array_equal(samples, want),
                f"{samples.shape[0]} samples, {want.shape[0]} in the file")

        for n in (80, 128):
            for padding in (0, 480000):
                s.mel(f"jfk.wav {n} mels, padding {padding}", jfk, want, filters[n], padding)

        rng = np.random.default_rng(0)
        t = np.arange(3 * 16000) / 16000
        signals = {
            "sine 440 Hz": (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32),
            "white noise": rng.uniform(-0.3, 0.3, 2 * 16000).astype(np.float32),
            "silence": np.zeros(16000, dtype=np.float32),
            "150 samples": rng.uniform(-0.5, 0.5, 150).astype(np.float32),
            "180 samples": rng.uniform(-0.5, 0.5, 180).astype(np.float32),
        }
        for name, x in signals.items():
            path = os.path.join(tmp, "signal.wav")
            float_wav(path, x)
            for padding in (0, 480000):
                s.mel(f"{name}, padding {padding}", path, x, filters[80], padding)
    print(f"audio: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
