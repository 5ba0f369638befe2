#!/usr/bin/python3
"""hearth's Whisper against the independent NumPy reference (whisper_reference.py).

    /usr/bin/python3 tests/numerics/test_whisper.py --hearth build/hearth [-k SUBSTR] [-v]

On random-weight checkpoints written by `hearth mkmodel --arch whisper`
(tiny in f32 and bf16; large-v3-turbo's shape with --big): hearth decodes the
first window of a log-mel input greedily (`hearth transcribe --mel --logits`),
and the reference, teacher-forced on hearth's tokens, must give the same
logits at every step (within tolerance) and the same greedy choice under the
same suppression rules. The special-token ids the rules need are derived here
from the .tiktoken file, as openai-whisper numbers them.

The last line is "whisper numerics: N passed, M failed".
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AUDIO = os.path.join(os.path.dirname(ROOT), "shared", "audio")
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import Tests, check, crashed, run  # noqa: E402
from whisper_reference import Whisper  # noqa: E402

TOP_K = 8
MAX_STEPS = 24
# max |hearth - reference| <= REL * max(1, max |reference logit|): f32
# accumulation order only (f32); activations rounded to BF16 in the BF16
# dot-product kernels, as for the Llama family (bf16).
REL = {"f32": 1e-3, "bf16": 1e-2, "mlx-f32": 1e-3, "mlx4": 2e-2}
# The checkpoint each kind names: mkmodel's --dtype and layout options.
KINDS = {"f32": ["--dtype", "f32"], "bf16": ["--dtype", "bf16"],
         "mlx-f32": ["--dtype", "f32", "--layout", "mlx"],
         "mlx4": ["--dtype", "f16", "--layout", "mlx", "--quant", "mlx4"]}


def special_tokens(tiktoken_file, vocab_size):
    """openai-whisper's numbering: the specials follow the ranks."""
    with open(tiktoken_file, "rb") as f:
        ranks = sum(1 for line in f if line.strip())
    multilingual = vocab_size >= 51865
    languages = vocab_size - 51765 - int(multilingual)
    eot = ranks
    sot = eot + 1
    transcribe = sot + 1 + languages + 1
    ids = {"eot": eot, "sot": sot, "en": sot + 1, "translate": transcribe - 1,
           "transcribe": transcribe, "sot_lm": transcribe + 1, "sot_prev": transcribe + 2,
           "no_speech": transcribe + 3, "no_timestamps": transcribe + 4,
           "timestamp_begin": transcribe + 5}
    # SuppressBlank needs encode(" "): the rank of the single byte 0x20.
    import base64
    with open(tiktoken_file, "rb") as f:
        for line in f:
            token, rank = line.split()
            if base64.b64decode(token) == b" ":
                ids["space"] = int(rank)
    return ids


class Suite(Tests):
    def __init__(self, args):
        self.args = args
        self.hearth = os.path.abspath(args.hearth)
        self.tmp = tempfile.mkdtemp(prefix="hearth-whisper-")
        self.windows = {}

    def mkmodel(self, preset, dtype, seed=3):
        out = os.path.join(self.tmp, f"{preset}-{dtype}")
        if not os.path.exists(out):
            p = run([self.hearth, "mkmodel", "--arch", "whisper", "--preset", preset, *KINDS[dtype],
                     "--seed", str(seed), "--tokenizer", os.path.join(AUDIO, "multilingual.tiktoken"),
                     "--out", out], timeout=600)
            check(p.returncode == 0, f"mkmodel failed: {p.err.strip()}")
        return out

    def window(self, preset, dtype):
        """A model, a random log-mel window, its special ids, the reference and its encoder output."""
        key = (preset, dtype)
        if key not in self.windows:
            model_dir = self.mkmodel(preset, dtype)
            ref = Whisper.load(model_dir)
            cfg = ref.cfg  # the Hugging Face keys, whatever the layout
            rng = np.random.default_rng(11)
            # A log-mel window in the range Whisper's scaling gives ((log10 + 4) / 4).
            mel = rng.uniform(-0.8, 1.2, size=(cfg["num_mel_bins"], 3000)).astype(np.float32)
            mel_path = os.path.join(self.tmp, f"mel-{cfg['num_mel_bins']}.npy")
            np.save(mel_path, mel)
            ids = special_tokens(os.path.join(model_dir, "multilingual.tiktoken"), cfg["vocab_size"])
            self.windows[key] = (model_dir, mel_path, ids, ref, ref.encode(mel.astype(np.float64)))
        return self.windows[key]

    def transcribe(self, model_dir, mel_path, *extra):
        p = run([self.hearth, "transcribe", "--model", model_dir, "--mel", mel_path, "--language", "en",
                 "--without-timestamps", "--suppress-tokens", "", "--no-fallback", "--temperature", "0",
                 *extra], timeout=600)
        check(not crashed(p) and p.returncode == 0, f"hearth transcribe failed: {p.err.strip()[-400:]}")
        return p.out

    def greedy_window(self, preset, dtype, notes):
        model_dir, mel_path, ids, ref, features = self.window(preset, dtype)
        out = self.transcribe(model_dir, mel_path, "--logits", str(TOP_K))
        steps = [json.loads(line) for line in out.splitlines() if line.strip()]
        check(steps, "no decoding steps printed")
        steps = steps[:MAX_STEPS]

        start = [ids["sot"], ids["en"], ids["transcribe"], ids["no_timestamps"]]
        chosen = [s["token"] for s in steps]
        logits = ref.decode(start + chosen[:-1], features)[len(start) - 1:]
        scale = max(1.0, float(np.abs(logits).max()))
        tol = REL[dtype] * scale
        suppressed = [ids[k] for k in ("transcribe", "translate", "sot", "sot_prev", "sot_lm", "no_speech")]
        worst = 0.0
        for i, step in enumerate(steps):
            row = logits[i]
            for token, value in step["top"]:
                worst = max(worst, abs(value - row[token]))
            masked = row.copy()
            masked[suppressed] = -np.inf
            if i == 0:
                masked[[ids["space"], ids["eot"]]] = -np.inf
            best = int(np.argmax(masked))
            if step["token"] != best:
                gap = masked[best] - masked[step["token"]]
                check(gap <= tol, f"step {i}: hearth chose {step['token']}, the reference {best} "
                                  f"(by {gap:.4g} > tolerance {tol:.4g})")
                notes.append(f"step {i}: a near tie ({gap:.3g}) decided the other way")
        check(worst <= tol, f"max |logit difference| {worst:.4g} > tolerance {tol:.4g}")
        notes.append(f"{len(steps)} steps, max |logit difference| {worst:.3g} (tolerance {tol:.3g}, "
                     f"logit scale {scale:.3g})")

    def beam_window(self, notes, beam=3, steps=8):
        """openai-whisper's BeamSearchDecoder and MaximumLikelihoodRanker, in NumPy on the reference."""
        model_dir, mel_path, ids, ref, features = self.window("tiny", "f32")
        out = self.transcribe(model_dir, mel_path, "--beam-size", str(beam), "--sample-len", str(steps),
                              "--format", "verbose_json")
        got = [t for seg in json.loads(out)["segments"] for t in seg["tokens"]]
        start = [ids["sot"], ids["en"], ids["transcribe"], ids["no_timestamps"]]
        suppressed = [ids[k] for k in ("transcribe", "translate", "sot", "sot_prev", "sot_lm", "no_speech")]

        def logprobs(seq, first):
            row = ref.decode(seq, features)[-1].copy()
            row[suppressed] = -np.inf
            if first:
                row[[ids["space"], ids["eot"]]] = -np.inf
            m = row[np.isfinite(row)].max()
            return row - (m + np.log(np.exp(row[np.isfinite(row)] - m).sum()))

        beams = [(tuple(start), 0.0)] * beam
        finished = {}
        for i in range(steps):
            scores, order = {}, []
            for seq, total in beams:
                lp = logprobs(list(seq), i == 0)
                for token in np.argsort(-lp, kind="stable")[: beam + 1]:
                    cand = seq + (int(token),)
                    if cand not in scores:
                        order.append(cand)
                    scores[cand] = total + float(lp[token])
            ranked = sorted(order, key=lambda c: scores[c], reverse=True)
            beams, newly = [], {}
            for cand in ranked:
                if cand[-1] == ids["eot"]:
                    newly[cand] = scores[cand]
                else:
                    beams.append((cand, scores[cand]))
                    if len(beams) == beam:
                        break
            for cand in sorted(newly, key=newly.get, reverse=True):
                if len(finished) >= beam:
                    break
                finished[cand] = newly[cand]
            if len(finished) >= beam:
                break
        if len(finished) < beam:
            for seq, total in sorted(beams, key=lambda b: b[1], reverse=True):
                finished[seq + (ids["eot"],)] = total
                if len(finished) >= beam:
                    break
        def body(seq):
            body = list(seq[len(start):])
            return body[: body.index(ids["eot"])] if ids["eot"] in body else body
        best = max(finished, key=lambda c: finished[c] / max(1, len(body(c))))
        want = body(best)
        check(got == want, f"hearth's beam search chose {got}, the reference {want}")
        notes.append(f"{beam} beams, {steps} steps: {len(want)} tokens, score {finished[best]:.4f}")

    def conv_in_the_other_layout(self, notes):
        """A convolution stored in the other layout has the same size; it is refused, not misread."""
        src = self.mkmodel("tiny", "f32")
        out = os.path.join(self.tmp, "tiny-f32-conv-swapped")
        shutil.copytree(src, out)
        with open(os.path.join(out, "config.json")) as f:
            cfg = json.load(f)
        d, mels = cfg["d_model"], cfg["num_mel_bins"]
        path = os.path.join(out, "model.safetensors")
        with open(path, "r+b") as f:
            data = bytearray(f.read())
            n = int.from_bytes(data[:8], "little")
            header = data[8:8 + n].decode()
            name = '"model.encoder.conv1.weight"'
            at = header.index(name)
            shape = f"[{d},{mels},3]"
            spot = header.index(shape, at)
            header = header[:spot] + f"[{d},3,{mels}]" + header[spot + len(shape):]  # the same length
            f.seek(8)
            f.write(header.encode())
        mel_path = self.window("tiny", "f32")[1]
        p = run([self.hearth, "transcribe", "--model", out, "--mel", mel_path, "--language", "en"], timeout=600)
        check(not crashed(p) and p.returncode != 0, f"accepted: exit {p.returncode}")
        check("convolution" in p.err, f"error: {p.err.strip()[-300:]}")
        notes.append(p.err.strip().splitlines()[-1][:160])

    def run_all(self):
        self.test("whisper tiny f32: a convolution in the other layout is refused", self.conv_in_the_other_layout)
        for dtype in ("f32", "bf16", "mlx-f32", "mlx4"):
            self.test(f"whisper tiny {dtype}: greedy window, logits vs NumPy",
                      lambda notes, dtype=dtype: self.greedy_window("tiny", dtype, notes))
        self.test("whisper tiny f32: beam search = NumPy beam search", self.beam_window)
        if self.args.big:
            self.test("whisper large-v3-turbo bf16: greedy window, logits vs NumPy",
                      lambda notes: self.greedy_window("large-v3-turbo", "bf16", notes))


if __name__ == "__main__":
    sys.exit(harness.main(Suite, "hearth's Whisper against the NumPy reference", "whisper numerics",
                          [(["--big"], {"action": "store_true",
                                        "help": "also the large-v3-turbo shape (1.6 GB)"})]))
