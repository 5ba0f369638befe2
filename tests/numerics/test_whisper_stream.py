#!/usr/bin/env python3
"""Streaming transcription (the server's /v1/audio/sessions) against one-shot
transcription of the same audio: `hearth transcribe --stream-ms N` feeds the
clip in N ms parts, transcribing each 30 s window as soon as its log-mel
frames are final, and must print exactly what the one-shot run prints, for
clips whose loudness rises late (the log-mel clamp changes, so early windows
are redone), with language detection, word timestamps, and the VAD gate.
Also: vocabulary hints are the prompt they stand for."""

import json
import os
import sys
import tempfile

import numpy as np

import harness
from harness import Tests, check, crashed, float_wav, run, shared_audio

QUICK = ["--sample-len", "12", "--no-fallback"]  # random weights: keep each window short


class Suite(Tests):
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="hearth-whisper-stream-")
        self.model = os.path.join(self.tmp, "tiny")
        audio_dir = shared_audio()
        check(audio_dir, "no ../shared/audio with jfk.wav")
        self.audio_dir = audio_dir
        p = run([args.hearth, "mkmodel", "--arch", "whisper", "--preset", "tiny", "--tokenizer",
                 os.path.join(audio_dir, "multilingual.tiktoken"), "--out", self.model])
        check(p.returncode == 0, f"mkmodel failed: {p.err}")
        speech = self.jfk()
        self.clips = {
            # 66 s at one loudness: no window needs redoing.
            "flat": np.concatenate([speech] * 6),
            # Quiet for 44 s, then 20 times louder: the clamp rises by 2.6 (log10),
            # so the quiet windows seen early are transcribed again.
            "louder": np.concatenate([speech * 0.05] * 4 + [speech] * 2),
            # 35 s of silence before speech: with the VAD, nothing runs early until speech.
            "late speech": np.concatenate([np.zeros(35 * 16000, np.float32), speech, speech]),
            # Silence only: the VAD finds nothing either way.
            "silence": np.zeros(40 * 16000, np.float32),
        }

    def jfk(self):
        import wave
        with wave.open(os.path.join(self.audio_dir, "jfk.wav")) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return (pcm.astype(np.float32) / 32768).astype(np.float32)

    def wav(self, name):
        path = os.path.join(self.tmp, name.replace(" ", "_") + ".wav")
        if not os.path.exists(path):
            float_wav(path, self.clips[name])
        return path

    def transcribe(self, clip, *extra):
        p = run([self.args.hearth, "transcribe", self.wav(clip), "--model", self.model,
                 "--format", "verbose_json", "--timings", *QUICK, *extra], timeout=600)
        check(not crashed(p) and p.returncode == 0, f"transcribe {' '.join(extra)} failed: {p.err}")
        timings = json.loads(p.err.strip().splitlines()[-1])
        return json.loads(p.out), timings

    def same_as_one_shot(self, notes, clip, parts_ms, *extra, redone=None, early=None):
        whole, _ = self.transcribe(clip, *extra)
        for ms in parts_ms:
            streamed, timings = self.transcribe(clip, "--stream-ms", str(ms), *extra)
            stats = timings["stream"]
            notes.append(f"{clip}, {ms} ms parts: {stats}, {len(whole['segments'])} segments")
            check(streamed == whole, f"{ms} ms parts: the transcript differs from the one-shot one:\n"
                  f"  one-shot: {json.dumps(whole)[:400]}\n  streamed: {json.dumps(streamed)[:400]}")
            if early is not None:
                check(early(stats["early_windows"]), f"{ms} ms parts: early windows {stats}")
            if redone is not None:
                check(redone(stats["redone"]), f"{ms} ms parts: redone windows {stats}")
        return whole

    def run_all(self):
        vad = os.path.join(self.audio_dir, "silero-v6.2.0-ggml.bin")
        self.test("flat loudness, language detected early: the same, nothing redone",
                  lambda n: self.same_as_one_shot(n, "flat", [500, 1700, 333],
                                                  early=lambda e: e >= 2, redone=lambda r: r == 0))
        self.test("loudness rising late: the same, the quiet windows redone",
                  lambda n: self.same_as_one_shot(n, "louder", [1000, 7000], "--language", "en",
                                                  early=lambda e: e >= 1, redone=lambda r: r >= 1))
        self.test("word timestamps: the same",
                  lambda n: self.same_as_one_shot(n, "louder", [2000], "--language", "en",
                                                  "--word-timestamps"))
        self.test("VAD gate, speech after 35 s of silence: the same",
                  lambda n: self.same_as_one_shot(n, "late speech", [1000], "--vad", vad,
                                                  "--language", "en"))

        def silence(notes):
            whole = self.same_as_one_shot(notes, "silence", [1000], "--vad", vad,
                                          early=lambda e: e == 0)
            check(whole["text"] == "" and whole["segments"] == [], f"silence gave {whole}")
        self.test("VAD gate, silence only: empty, no window transcribed", silence)

        def vocabulary(notes):
            terms = ["Kubernetes", "hearth", "Whisper"]
            given, _ = self.transcribe("flat", "--language", "en", "--vocabulary", ",".join(terms))
            as_prompt, _ = self.transcribe("flat", "--language", "en", "--initial-prompt",
                                           ", ".join(terms))
            check(given == as_prompt, "vocabulary terms are not the prompt ' Kubernetes, hearth, Whisper'")
            plain, _ = self.transcribe("flat", "--language", "en")
            notes.append(f"with vocabulary: {given['text'][:60]!r}; without: {plain['text'][:60]!r}")
        self.test("vocabulary: the terms are the prompt they spell", vocabulary)

        def budget(notes):
            terms = [f"term{i}" for i in range(200)]
            p = run([self.args.hearth, "transcribe", self.wav("flat"), "--model", self.model,
                     "--language", "en", "--vocabulary", ",".join(terms), "--initial-prompt",
                     "a prompt of a few words", *QUICK], timeout=600)
            check(p.returncode == 0, p.err)
            line = [l for l in p.err.splitlines() if l.startswith("vocabulary:")]
            check(line, f"no vocabulary line on stderr: {p.err}")
            notes.append(line[0][:120])
            used = int(line[0].split()[1])
            check(0 < used < 200, f"{used} of 200 terms fit 223 tokens")
            dropped = line[0].split("dropped:")[1].split()
            check(dropped == [f"'term{i}'" for i in range(used, 200)],
                  "the dropped terms are not the ones after the last that fit, in order")
        self.test("vocabulary past the prompt budget: whole terms kept in order, the rest reported",
                  budget)


if __name__ == "__main__":
    sys.exit(harness.main(Suite, "streamed Whisper transcription = one-shot", "whisper streaming"))
