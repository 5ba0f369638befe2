#!/usr/bin/python3
"""hearth numerics: every architecture against the independent NumPy reference.

    /usr/bin/python3 tests/numerics/test_numerics.py --hearth build/hearth [-k SUBSTR] [--big] [--keep]

What is checked (docs/numerics.md explains the tolerances):
  * mkmodel writes the published layouts: tensor names, shapes, dtypes,
    header padding, config keys, a padded tokenizer; deterministic from the
    seed; its MLX quantizer matches MLX's CPU kernel bit for bit.
  * For llama, mistral, qwen2, qwen3 in f32, bf16, mlx4 and mlx8 (plus a few
    extra layouts and RoPE/attention config variants): hearth's prompt
    logits (--dump-logits) and the logits of every decode step (--logits K,
    checked against the reference teacher-forced on hearth's own tokens)
    agree with the float64 reference, and 16 greedy tokens are identical.
  * The bundled stories260k model: 64 greedy tokens from BOS identical to the
    reference, and the documented text.
  * Bad input (missing or corrupt checkpoints, inconsistent configs, bad ids)
    fails with a message naming the problem, never with a crash.

The last line is "numerics: N passed, M failed"; the exit status is 1 when
anything failed.
"""

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import reference  # noqa: E402
from harness import Failure, Tests, check, crashed, run  # noqa: E402

STORIES = os.path.join(ROOT, "models", "stories260k")
STORIES_TEXT = ("Once upon a time, there was a little girl named Lily. "
                "She loved to play outside in the park.")

PROMPT_LEN = 32
GEN_TOKENS = 16
TOP_K = 5

# Logit tolerance: max |hearth - reference| <= REL[kind] * max(1, max |reference logit|).
# The reference computes in float64 from the stored weights, so the tolerance
# only covers hearth's own arithmetic: f32 accumulation order (f32), activations
# or KV kept in 16-bit (bf16/f16), and int8 activation quantization in the
# quantized matmul kernels (mlx). For quantized checkpoints the tolerance is
# at least INT8_FLOOR times the "int8 noise floor" of that model and prompt:
# how far the reference itself moves when the input of every quantized matmul
# is rounded to int8 per token and weight group (scale max|x|/127). Random
# tiny models amplify activation rounding (sharp attention), so a fixed
# fraction of the logit range would be either too tight for a correct int8
# kernel or too loose elsewhere. BF16 checkpoints get the same treatment with a
# "bf16 noise floor": on CPUs with AVX-512 BF16, hearth multiplies BF16
# weights by activations rounded to BF16 (as llama.cpp does with F16), so the
# floor is how far the reference moves when every matmul input is rounded to
# BF16. The same tolerance decides a "near tie": a
# greedy step where hearth's token is not the reference's argmax is accepted
# only if the reference's own logits for the two are within it.
REL = {"f32": 1e-3, "bf16": 1e-2, "f16": 1e-2, "mlx": 2e-2}
INT8_FLOOR = 2.0
KV_INT8_FLOOR = 0.25  # of the int8 KV noise floor (compare(kv="int8"))
EMBED_REL = {"f32": 1e-4, "bf16": 1e-2, "f16": 1e-2, "mlx": 3e-2}


# ---------------------------------------------------------------------------
# small helpers


def read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return n, json.loads(f.read(n))


def write_header(path, header, pad_to=None):
    """Rewrites the JSON header of a safetensors file in place (same length when pad_to)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        f.seek(8 + n)
        data = f.read()
    text = json.dumps(header, separators=(",", ":")).encode()
    size = pad_to if pad_to is not None else len(text) + (-(8 + len(text)) % 8)
    if len(text) > size:
        raise ValueError("header grew")
    text += b" " * (size - len(text))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", size) + text + data)


# ---------------------------------------------------------------------------
# MLX affine quantization, CPU-kernel rules, in float32 NumPy (independent of
# hearth's C++ quantizer, used to check the checkpoints mkmodel writes)


def mlx_quantize(w, bits, group):
    f32 = np.float32
    rows, cols = w.shape
    g = w.astype(f32).reshape(rows, cols // group, group)
    n_bins = f32((1 << bits) - 1)
    wmax, wmin = g.max(axis=2), g.min(axis=2)
    mask = np.abs(wmin) > np.abs(wmax)
    scale = np.maximum((wmax - wmin) / n_bins, f32(1e-7))
    scale = np.where(mask, scale, -scale).astype(f32)
    edge = np.where(mask, wmin, wmax).astype(f32)
    q0 = np.rint(edge / scale)
    nz = q0 != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(nz, edge / np.where(nz, q0, f32(1)), scale).astype(f32)
    bias = np.where(nz, edge, f32(0)).astype(f32)
    q = np.clip(np.rint((g - bias[:, :, None]) / scale[:, :, None]), 0, n_bins)
    q = q.astype(np.uint32).reshape(rows, cols)
    bitplanes = ((q[:, :, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    words = np.packbits(bitplanes.reshape(rows, cols * bits), axis=1, bitorder="little")
    return words.view("<u4").reshape(rows, cols * bits // 32), scale, bias


def write_safetensors(path, tensors, metadata):
    """A plain safetensors writer (sorted names, header padded to 8 bytes)."""
    kinds = {"float32": "F32", "float16": "F16", "uint32": "U32"}
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        header[name] = {"dtype": kinds[str(a.dtype)], "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def mlx_convert(src, out, bits, group):
    """Quantizes a float checkpoint the way mlx_lm.convert lays it out: every
    Linear and the embedding whose input size is a multiple of the group,
    f16 scales and biases, `quantization` in config.json."""
    shutil.copytree(src, out)
    tensors = {}
    for name, w in reference.read_checkpoint(src).items():
        mod = name[: -len(".weight")]
        if w.ndim == 2 and w.shape[1] % group == 0:
            tensors[mod + ".weight"], scales, biases = mlx_quantize(w, bits, group)
            tensors[mod + ".scales"] = scales.astype(np.float16)
            tensors[mod + ".biases"] = biases.astype(np.float16)
        else:
            tensors[name] = w
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "mlx"})
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization"] = cfg["quantization_config"] = {"group_size": group, "bits": bits}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return out


# ---------------------------------------------------------------------------
# hearth


class Hearth:
    def __init__(self, path, workdir):
        self.path = path
        self.workdir = workdir
        self.n = 0

    def mkmodel(self, out, *args):
        p = run([self.path, "mkmodel", "--out", out, *args])
        check(p.returncode == 0, f"hearth mkmodel {' '.join(args)} failed ({p.returncode}): {p.err.strip()}")
        return out

    def generate(self, model, ids, max_tokens, top_k=TOP_K, extra=()):
        self.n += 1
        dump = os.path.join(self.workdir, f"logits{self.n}.f32")
        cmd = [self.path, "generate", "--model", model, "--prompt-ids", ",".join(map(str, ids)),
               "--max-tokens", str(max_tokens), "--temperature", "0", "--logits", str(top_k),
               "--dump-logits", dump, *extra]
        p = run(cmd)
        check(not crashed(p), f"hearth generate crashed ({p.returncode}): {p.err.strip()[-400:]}")
        check(p.returncode == 0, f"hearth generate failed ({p.returncode}): {p.err.strip()[-400:]}")
        check("warning" not in p.err, f"hearth generate warned: {p.err.strip()[-400:]}")
        steps = []
        for line in p.out.splitlines():
            if line.strip():
                try:
                    steps.append(json.loads(line))
                except ValueError:
                    raise Failure(f"--logits output is not one JSON object per line: {line[:200]!r}")
        check(os.path.exists(dump), "--dump-logits wrote no file")
        raw = np.fromfile(dump, dtype="<f4")
        return steps, raw


    def embed(self, model, inputs, dimensions=0, extra=()):
        """hearth embed over token-id inputs (one batch): a list of {index, tokens, embedding}."""
        cmd = [self.path, "embed", "--model", model, "--ids", ";".join(",".join(map(str, ids)) for ids in inputs),
               *extra]
        if dimensions:
            cmd += ["--dimensions", str(dimensions)]
        p = run(cmd)
        check(not crashed(p), f"hearth embed crashed ({p.returncode}): {p.err.strip()[-400:]}")
        check(p.returncode == 0, f"hearth embed failed ({p.returncode}): {p.err.strip()[-400:]}")
        return [json.loads(line) for line in p.out.splitlines() if line.strip()], p.err


def decode_pieces(tokenizer_dir, ids):
    """SentencePiece-style decode of the stories tokenizer (for checking text)."""
    with open(os.path.join(tokenizer_dir, "tokenizer.json")) as f:
        vocab = json.load(f)["model"]["vocab"]
    inv = {v: k for k, v in vocab.items()}
    out = bytearray()
    for i in ids:
        piece = inv[i]
        if piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:
            out.append(int(piece[3:5], 16))
        elif piece in ("<s>", "</s>", "<unk>"):
            continue
        else:
            out += piece.replace("\u2581", " ").encode()
    text = out.decode("utf-8", "replace")
    return text[1:] if text.startswith(" ") else text


# ---------------------------------------------------------------------------
# comparing hearth with the reference


class Int8Input:
    """Stands in for a weight matrix in the reference: its input is rounded as
    an int8-activation kernel would round it (per token and weight group,
    symmetric, scale max|x|/127, round to nearest)."""

    __array_ufunc__ = None  # make `x @ w.T` call __rmatmul__

    def __init__(self, w, group):
        self.w, self.group, self.T = w, group, self

    def __rmatmul__(self, x):
        rows = x.reshape(-1, x.shape[-1])
        g = rows.reshape(rows.shape[0], -1, self.group)
        amax = np.abs(g).max(axis=2, keepdims=True)
        amax = np.where(amax > 0, amax, 1.0)
        xq = (np.rint(g / amax * 127.0) * (amax / 127.0)).reshape(rows.shape)
        return (xq @ self.w.T).reshape(*x.shape[:-1], -1)


class Bf16Input:
    """Stands in for a weight matrix in the reference: its input is rounded to
    BF16 (nearest even), as the BF16 dot-product kernel rounds it."""

    __array_ufunc__ = None

    def __init__(self, w):
        self.w, self.T = w, self

    def __rmatmul__(self, x):
        return reference.bf16_round(np.asarray(x, dtype=np.float32)).astype(np.float64) @ self.w.T


def bf16_noise_floor(model_dir, ids, ref_logits):
    m = reference.Model.load(model_dir)
    for L in m.layers:
        for key in ("q", "k", "v", "o", "gate", "up", "down"):
            L[key] = Bf16Input(L[key])
    m.lm_head = Bf16Input(m.lm_head)
    return float(np.abs(m.logits_for(ids) - ref_logits).max())


def int8_noise_floor(model_dir, ids, ref_logits):
    m = reference.Model.load(model_dir)
    if not m.quantized:
        return 0.0
    names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
    for L in m.layers:
        for key, name in names.items():
            q = m.quantized.get(L["path"] + name)
            if q:
                L[key] = Int8Input(L[key], q[1])
    head = m.quantized.get("model.embed_tokens" if m.tied else "lm_head")
    if head:
        m.lm_head = Int8Input(m.lm_head, head[1])
    return float(np.abs(m.logits_for(ids) - ref_logits).max())


def choose_prompt(model, seed_base=1000, tries=6):
    """A deterministic 32-token prompt whose 16 greedy steps have the widest
    top-1/top-2 margin among a few RandomState seeds (so the greedy check is
    not decided by rounding at a near tie)."""
    best = None
    for k in range(tries):
        ids = [int(t) for t in np.random.RandomState(seed_base + k).randint(3, model.vocab, PROMPT_LEN)]
        out = model.run(ids, GEN_TOKENS, top_k=2)
        margin = min(t[0][1] - t[1][1] for t in out["top"])
        if best is None or margin > best[0]:
            best = (margin, ids, out)
    return best


def reference_embedding(model, ids, pooling, dimensions=0):
    """Sentence Transformers' pipeline on the reference: pool the final-normed
    hidden states (last token, mean, or first), truncate, L2-normalize."""
    h = model.hidden_states(list(ids), model.new_cache(), 0)
    v = {"last": lambda: h[-1], "mean": lambda: h.mean(axis=0), "first": lambda: h[0]}[pooling]()
    if dimensions:
        v = v[:dimensions]
    return v / np.linalg.norm(v)


def compare_embeddings(hearth, model_dir, kind, notes, inputs, pooling, dimensions=0, extra=()):
    """hearth's embeddings of a batch of inputs against the reference's.

    Tolerance: max |hearth - reference| <= EMBED_REL[kind] (the vectors have
    unit length, so this is relative to the vector): f32 arithmetic order,
    16-bit activations, or int8-quantized matmul inputs (mlx) move the
    hidden states by about as much as they move logits."""
    model = reference.Model.load(model_dir)
    got, err = hearth.embed(model_dir, inputs, dimensions, extra)
    check(len(got) == len(inputs), f"{len(got)} embeddings for {len(inputs)} inputs")
    worst = 0.0
    for i, ids in enumerate(inputs):
        ref = reference_embedding(model, ids, pooling, dimensions)
        g = np.asarray(got[i]["embedding"], dtype=np.float64)
        check(got[i]["index"] == i and got[i]["tokens"] == len(ids), f"input {i}: {got[i]['index']}, {got[i]['tokens']} tokens")
        check(g.shape == ref.shape, f"input {i}: {g.shape[0]} values, expected {ref.shape[0]}")
        check(abs(np.linalg.norm(g) - 1) < 1e-5, f"input {i}: norm {np.linalg.norm(g)}, expected 1")
        diff = float(np.abs(g - ref).max())
        check(diff <= EMBED_REL[kind], f"input {i} ({len(ids)} tokens): max |hearth - reference| {diff:.3g} > {EMBED_REL[kind]}")
        worst = max(worst, diff)
    check(f"pooling: {pooling}" in err, f"hearth embed did not report {pooling} pooling: {err.strip()[-200:]}")
    notes.append(f"max |diff| {worst:.3g} over {len(inputs)} inputs")


def compare(hearth, model_dir, kind, notes, ids=None, max_tokens=GEN_TOKENS, model=None, kv=None):
    model = model or reference.Model.load(model_dir)
    default_kv = model.kv
    if kv:
        model.kv = kv
    if ids is None:
        margin, ids, ref = choose_prompt(model)
    else:
        ref = model.run(ids, max_tokens, top_k=2)
        margin = min(t[0][1] - t[1][1] for t in ref["top"])
    ref_logits = ref["prompt_logits"]
    tol = REL[kind] * max(1.0, float(np.abs(ref_logits).max()))
    if kind == "mlx":
        floor = int8_noise_floor(model_dir, ids, ref_logits)
        tol = max(tol, INT8_FLOOR * floor)
        notes.append(f"int8 noise floor {floor:.3g}")
    if kind == "bf16":
        floor = bf16_noise_floor(model_dir, ids, ref_logits)
        tol = max(tol, INT8_FLOOR * floor)
        notes.append(f"bf16 noise floor {floor:.3g}")
    if kv == "int8":
        # A code that rounds the other way in hearth (its keys and values
        # differ from the reference's in the last bits) moves a logit by a
        # small part of what rounding every entry to int8 does (the floor);
        # unrounded entries would miss by the whole floor and fail.
        unrounded = reference.Model.load(model_dir)
        unrounded.kv = default_kv
        floor = float(np.abs(unrounded.logits_for(ids) - ref_logits).max())
        tol = max(tol, KV_INT8_FLOOR * floor)
        notes.append(f"int8 KV noise floor {floor:.3g}")

    steps, raw = hearth.generate(model_dir, ids, max_tokens, extra=["--kv-type", kv] if kv else ())
    # (1) prompt logits
    check(raw.size == len(ids) * model.vocab,
          f"--dump-logits holds {raw.size} floats, expected {len(ids)} x {model.vocab}")
    got = raw.reshape(len(ids), model.vocab).astype(np.float64)
    check(np.all(np.isfinite(got)), "prompt logits contain NaN/inf")
    err = np.abs(got - ref_logits)
    worst = np.unravel_index(np.argmax(err), err.shape)
    check(err.max() <= tol,
          f"prompt logits differ: max |diff| {err.max():.3g} > tol {tol:.3g} at position {worst[0]}, "
          f"token {worst[1]} (hearth {got[worst]:.5f}, reference {ref_logits[worst]:.5f}); "
          f"per-position max: {np.array2string(err.max(axis=1), precision=3, max_line_width=400)}")

    # (2) decode steps, teacher-forced: the reference's logits after hearth's own tokens
    check(len(steps) >= 1, "no generated steps on stdout")
    toks = []
    for i, s in enumerate(steps):
        check(isinstance(s, dict) and s.get("step") == i and "token" in s and "top" in s,
              f"step line {i} malformed: {json.dumps(s)[:200]}")
        toks.append(int(s["token"]))
    tf = model.logits_for(ids + toks[:-1])[len(ids) - 1:]
    decode_err = 0.0
    near_ties = []
    for i, s in enumerate(steps):
        r = tf[i]
        top = s["top"]
        check(len(top) == min(TOP_K, model.vocab), f"step {i}: {len(top)} top entries, expected {TOP_K}")
        check(top[0][0] == s["token"], f"step {i}: token {s['token']} is not top[0] {top[0]}")
        vals = [v for _, v in top]
        check(all(a >= b for a, b in zip(vals, vals[1:])), f"step {i}: top not sorted: {top}")
        for tid, v in top:
            d = abs(v - r[tid])
            decode_err = max(decode_err, d)
            check(d <= tol, f"step {i}: logit of token {tid} is {v:.5f}, reference {r[tid]:.5f} "
                            f"(|diff| {d:.3g} > tol {tol:.3g})")
        best = int(np.argmax(r))
        if s["token"] != best:
            gap = r[best] - r[s["token"]]
            check(gap <= tol, f"step {i}: greedy token {s['token']} but the reference's argmax is {best} "
                              f"by {gap:.4f} (> tol {tol:.3g}); tokens so far {toks[:i + 1]}")
            near_ties.append((i, s["token"], best, round(float(gap), 5)))
    # (3) greedy tokens against the reference's own free-running greedy decode
    n_expected = len(ref["tokens"])
    eos = model.eos_ids
    if toks != ref["tokens"]:
        check(near_ties, f"greedy tokens differ: hearth {toks}, reference {ref['tokens']}")
        notes.append(f"diverged at a near tie {near_ties[0]} (step, hearth, reference, gap)")
    if len(toks) < max_tokens:
        check(toks[-1] in eos, f"hearth stopped after {len(toks)} tokens without EOS: {toks}")
    check(not any(t in eos for t in toks[:-1]), f"hearth continued past EOS: {toks}")
    notes.append(f"prompt |diff| {err.max():.2e}, decode |diff| {decode_err:.2e}, tol {tol:.2e}, "
                 f"{len(toks)}/{n_expected} tokens, min margin {margin:.3f}")


# ---------------------------------------------------------------------------
# the tests


ARCHS = ["llama", "mistral", "qwen2", "qwen3"]
FORMATS = {  # name: (mkmodel args, tolerance kind)
    "f32": (["--dtype", "f32"], "f32"),
    "bf16": (["--dtype", "bf16"], "bf16"),
    "mlx4": (["--dtype", "bf16", "--quant", "mlx4"], "mlx"),
    "mlx8": (["--dtype", "f16", "--quant", "mlx8"], "mlx"),
}
EXTRA_FORMATS = [  # (arch, name, args, kind): more dtypes, bit widths, group sizes
    ("llama", "f16", ["--dtype", "f16"], "f16"),
    ("llama", "mlx4-g128", ["--dtype", "bf16", "--quant", "mlx4", "--group-size", "128"], "mlx"),
    ("qwen3", "mlx6-g32", ["--dtype", "bf16", "--quant", "mlx6", "--group-size", "32"], "mlx"),
    ("mistral", "mlx3-g32", ["--dtype", "f32", "--quant", "mlx3", "--group-size", "32"], "mlx"),
    ("qwen2", "mixed_4_6", ["--dtype", "bf16", "--quant", "mixed_4_6"], "mlx"),
]


def expected_tensors(cfg, quantized_modules):
    L, arch = cfg["num_hidden_layers"], cfg["model_type"]
    modules = ["model.embed_tokens"]
    vectors = ["model.norm.weight"]
    for i in range(L):
        p = f"model.layers.{i}."
        modules += [p + f"self_attn.{x}_proj" for x in "qkvo"] + [p + f"mlp.{x}_proj" for x in ("gate", "up", "down")]
        vectors += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        if arch == "qwen2":
            vectors += [p + f"self_attn.{x}_proj.bias" for x in "qkv"]
        if arch == "qwen3":
            vectors += [p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight"]
    if not cfg["tie_word_embeddings"]:
        modules.append("lm_head")
    names = set(vectors)
    for m in modules:
        names.add(m + ".weight")
        if m in quantized_modules:
            names |= {m + ".scales", m + ".biases"}
    return names


class Suite(Tests):
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="hearth-numerics-")
        self.hearth = Hearth(os.path.abspath(args.hearth), self.tmp)
        self.models = {}

    # models are made once and shared by the tests that need them
    def model(self, arch, fmt, args=None, seed=7):
        key = (arch, fmt, seed)
        if key not in self.models:
            out = os.path.join(self.tmp, f"{arch}-{fmt}-s{seed}")
            if args is None:
                args = FORMATS[fmt][0]
            self.models[key] = self.hearth.mkmodel(out, "--arch", arch, "--preset", "tiny",
                                                   "--seed", str(seed), *args)
        return self.models[key]

    def variant(self, base, name, edit, edit_tensors=None):
        """A copy of model dir `base` with config.json changed by edit(cfg),
        and its tensors by edit_tensors(cfg, tensors) where given."""
        out = os.path.join(self.tmp, name)
        if not os.path.exists(out):
            shutil.copytree(base, out)
            with open(os.path.join(out, "config.json")) as f:
                cfg = json.load(f)
            edit(cfg)
            with open(os.path.join(out, "config.json"), "w") as f:
                json.dump(cfg, f, indent=2)
            if edit_tensors:
                tensors = {k: np.array(v) for k, v in reference.read_checkpoint(out).items()}
                edit_tensors(cfg, tensors)
                write_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
        return out

    def mkmodel_tests(self):
        for arch in ARCHS:
            def layout(notes, arch=arch):
                for fmt in FORMATS:
                    d = self.model(arch, fmt)
                    with open(os.path.join(d, "config.json")) as f:
                        cfg = json.load(f)
                    cls = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                           "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[arch]
                    check(cfg["architectures"] == [cls] and cfg["model_type"] == arch, "architectures/model_type")
                    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                              "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
                              "rms_norm_eps", "rope_theta", "rope_scaling", "tie_word_embeddings",
                              "torch_dtype", "bos_token_id", "eos_token_id"):
                        check(k in cfg, f"{fmt}: config.json lacks {k}")
                    check(cfg["vocab_size"] == 512, "tiny vocab is 512")
                    check(cfg["tie_word_embeddings"] == (arch in ("llama", "qwen3")), "tie_word_embeddings")
                    if arch == "qwen3":
                        check(cfg["head_dim"] * cfg["num_attention_heads"] != cfg["hidden_size"],
                              "qwen3 tiny should have head_dim*heads != hidden")
                    if arch == "mistral":
                        check("sliding_window" in cfg and cfg["sliding_window"] is None, "mistral sliding_window null")
                    path = os.path.join(d, "model.safetensors")
                    n, header = read_header(path)
                    check((8 + n) % 8 == 0, f"{fmt}: header not padded to 8 bytes")
                    meta = header.pop("__metadata__", None)
                    quant = cfg.get("quantization")
                    check(meta == {"format": "mlx" if quant else "pt"}, f"{fmt}: metadata {meta}")
                    qmods = {k[:-len(".scales")] for k in header if k.endswith(".scales")}
                    if quant:
                        check(cfg.get("quantization_config") == quant, "quantization_config copy")
                        check(qmods, "no quantized modules")
                    want = expected_tensors(cfg, qmods)
                    check(set(header) == want, f"{fmt}: tensor names differ: extra {sorted(set(header) - want)[:4]}, "
                                               f"missing {sorted(want - set(header))[:4]}")
                    names = sorted(header)
                    off = 0
                    for name in names:
                        b, e = header[name]["data_offsets"]
                        check(b == off, f"{fmt}: {name} not in sorted contiguous order")
                        off = e
                    check(os.path.getsize(path) == 8 + n + off, f"{fmt}: file size")
                    want_dtype = {"f32": "F32", "bf16": "BF16", "mlx4": "BF16", "mlx8": "F16"}[fmt]
                    for name, info in header.items():
                        mod = name.rsplit(".", 1)[0]
                        if mod in qmods and name.endswith(".weight"):
                            check(info["dtype"] == "U32", f"{name} dtype")
                        else:
                            check(info["dtype"] == want_dtype, f"{fmt}: {name} dtype {info['dtype']}")
                    with open(os.path.join(d, "tokenizer.json")) as f:
                        tok = json.load(f)
                    check(len(tok["model"]["vocab"]) == 512, "tokenizer vocab")
                    reference.Model.load(d)  # the reference accepts it (shapes, no stray tensors)
                notes.append("config, names, dtypes, offsets, padding, tokenizer ok")
            self.test(f"mkmodel layout {arch}", layout)

        def quantizer(notes):
            count = 0
            for arch in ARCHS:
                for fmt, bits, group, dt, src_fmt in (("mlx4", 4, 64, "bf16", "bf16"), ("mlx8", 8, 64, "f16", None)):
                    q = reference.read_checkpoint(self.model(arch, fmt))
                    if src_fmt:
                        src = reference.read_checkpoint(self.model(arch, src_fmt))
                    else:
                        f32 = reference.read_checkpoint(self.model(arch, "f32"))
                        src = {k: v.astype(np.float16).astype(np.float32) for k, v in f32.items()}
                    for name in [k for k in q if k.endswith(".scales")]:
                        mod = name[: -len(".scales")]
                        w = src[mod + ".weight"]
                        words, scale, bias = mlx_quantize(w, bits, group)
                        if dt == "bf16":
                            scale, bias = reference.bf16_round(scale), reference.bf16_round(bias)
                        else:
                            scale, bias = scale.astype(np.float16), bias.astype(np.float16)
                        check(np.array_equal(q[mod + ".weight"], words), f"{arch} {fmt} {mod}: packed codes differ "
                              f"in {int((q[mod + '.weight'] != words).sum())} words")
                        check(np.array_equal(q[mod + ".scales"].astype(np.float32), scale.astype(np.float32)),
                              f"{arch} {fmt} {mod}: scales differ")
                        check(np.array_equal(q[mod + ".biases"].astype(np.float32), bias.astype(np.float32)),
                              f"{arch} {fmt} {mod}: biases differ")
                        count += 1
            notes.append(f"{count} quantized matrices bit-identical to a NumPy MLX CPU quantizer")
        self.test("mkmodel quantizer = MLX CPU kernel", quantizer)

        def determinism(notes):
            a = self.model("qwen3", "mlx4")
            b = self.hearth.mkmodel(os.path.join(self.tmp, "det-b"), "--arch", "qwen3", "--preset", "tiny",
                                    "--seed", "7", "--dtype", "bf16", "--quant", "mlx4")
            c = self.hearth.mkmodel(os.path.join(self.tmp, "det-c"), "--arch", "qwen3", "--preset", "tiny",
                                    "--seed", "8", "--dtype", "bf16", "--quant", "mlx4")
            read = lambda d: open(os.path.join(d, "model.safetensors"), "rb").read()
            check(read(a) == read(b), "same seed gave different bytes")
            check(read(a) != read(c), "different seeds gave the same bytes")
            f32 = reference.read_checkpoint(self.model("llama", "f32"))
            bf = reference.read_checkpoint(self.model("llama", "bf16"))
            for k in f32:
                check(np.array_equal(reference.bf16_round(f32[k]), bf[k]), f"bf16 {k} is not the f32 weight rounded")
            notes.append("same seed same bytes; bf16 = round(f32)")
        self.test("mkmodel deterministic", determinism)

        def bad_options(notes):
            out = os.path.join(self.tmp, "bad-mkmodel")
            for args, want in ((["--arch", "gpt9"], "gpt9"), (["--arch", "llama", "--dtype", "f8"], "f8"),
                               (["--arch", "llama", "--quant", "mlx7"], "mlx7"),
                               (["--arch", "llama", "--quant", "mlx4", "--group-size", "48"], "group"),
                               (["--arch", "llama", "--preset", "huge"], "huge"),
                               (["--arch", "llama", "--frobnicate", "1"], "frobnicate")):
                p = run([self.hearth.path, "mkmodel", "--out", out, *args])
                check(p.returncode > 0 and not crashed(p) and want in p.err,
                      f"mkmodel {' '.join(args)}: exit {p.returncode}, stderr {p.err.strip()!r}")
            p = run([self.hearth.path, "mkmodel", "--arch", "llama"])
            check(p.returncode > 0 and "--out" in p.err, f"mkmodel without --out: {p.err.strip()!r}")
            notes.append("unknown arch/dtype/quant/group/preset/option and a missing --out are errors")
        self.test("mkmodel rejects bad options", bad_options)

        def big(notes, preset, args, arch, layers, vocab, hd):
            out = os.path.join(self.tmp, "big-" + preset)
            t0 = time.time()
            self.hearth.mkmodel(out, "--preset", preset, *args)
            secs = time.time() - t0
            with open(os.path.join(out, "config.json")) as f:
                cfg = json.load(f)
            check(cfg["model_type"] == arch and cfg["num_hidden_layers"] == layers and cfg["vocab_size"] == vocab
                  and cfg["head_dim"] == hd, "config")
            _, header = read_header(os.path.join(out, "model.safetensors"))
            header.pop("__metadata__")
            qmods = {k[:-7] for k in header if k.endswith(".scales")}
            check(set(header) == expected_tensors(cfg, qmods), "tensor names")
            with open(os.path.join(out, "tokenizer.json")) as f:
                check(len(json.load(f)["model"]["vocab"]) == vocab, "tokenizer vocab padded to vocab_size")
            size = os.path.getsize(os.path.join(out, "model.safetensors"))
            notes.append(f"{size / 1e9:.2f} GB in {secs:.1f}s")
            shutil.rmtree(out)

        self.test("mkmodel qwen3-0.6b mlx4",
                  lambda n: big(n, "qwen3-0.6b", ["--dtype", "bf16", "--quant", "mlx4"], "qwen3", 28, 151936, 128))
        if self.args.big:
            self.test("mkmodel llama-3.2-1b bf16",
                      lambda n: big(n, "llama-3.2-1b", ["--dtype", "bf16"], "llama", 16, 128256, 64))

    # -- reference self-check -----------------------------------------------

    def reference_tests(self):
        def stories(notes):
            m = reference.Model.load(STORIES)
            out = m.run([1], 64)
            text = decode_pieces(STORIES, out["tokens"])
            check(text.startswith(STORIES_TEXT), f"reference greedy text: {text!r}")
            notes.append(text[:80])
        self.test("reference reproduces stories260k", stories)

    # -- hearth against the reference ---------------------------------------

    def numerics_tests(self):
        def kv_default(notes):
            # The reference rounds KV entries to BF16 exactly where hearth's
            # default keeps them in BF16; this pins that default.
            ids = list(range(3, 3 + PROMPT_LEN))
            for fmt, native, other in (("f32", "f32", "bf16"), ("bf16", "bf16", "f32"), ("mlx4", "bf16", "f32")):
                d = self.model("qwen3", fmt)
                _, auto = self.hearth.generate(d, ids, 1)
                _, same = self.hearth.generate(d, ids, 1, extra=["--kv-type", native])
                _, differ = self.hearth.generate(d, ids, 1, extra=["--kv-type", other])
                check(np.array_equal(auto, same), f"{fmt}: default KV logits differ from --kv-type {native}'s")
                check(not np.array_equal(auto, differ), f"{fmt}: --kv-type {other} gave the default's logits")
            notes.append("f32 checkpoints keep f32 entries; bf16 and mlx4 ones bf16")
        self.test("numerics default KV type follows the checkpoint", kv_default)
        for arch in ARCHS:
            for fmt, (args, kind) in FORMATS.items():
                self.test(f"numerics {arch} {fmt}",
                          lambda notes, arch=arch, fmt=fmt, kind=kind: compare(
                              self.hearth, self.model(arch, fmt), kind, notes))
        for arch, fmt, args, kind in EXTRA_FORMATS:
            self.test(f"numerics {arch} {fmt}",
                      lambda notes, arch=arch, fmt=fmt, args=args, kind=kind: compare(
                          self.hearth, self.model(arch, fmt, args), kind, notes))

        # Config variants of the f32 tiny models: RoPE scalings, windows, keys
        # that published configs leave out.
        def rope_linear(cfg):
            cfg["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}

        def rope_yarn(cfg):
            cfg["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128}
            cfg["max_position_embeddings"] = 512

        def rope_parameters_yarn(cfg):
            # transformers v5 spelling: the base and the scaling in one object,
            # no rope_theta; a DeepSeek-style mscale pair, an untruncated ramp.
            cfg.pop("rope_theta", None)
            cfg.pop("rope_scaling", None)
            cfg["rope_parameters"] = {"rope_type": "yarn", "rope_theta": 50000.0, "factor": 4.0,
                                      "original_max_position_embeddings": 128, "mscale": 0.8,
                                      "mscale_all_dim": 0.5, "truncate": False}
            cfg["max_position_embeddings"] = 512

        def qwen2_published(cfg):
            # As in Qwen2.5's own config.json: no attention_bias key (HF's Qwen2
            # always has q/k/v biases) and a sliding_window that is ignored
            # because use_sliding_window is false.
            cfg.pop("attention_bias", None)
            cfg["sliding_window"] = 8
            cfg["use_sliding_window"] = False

        def mistral_window(cfg):
            cfg["sliding_window"] = 8  # honoured by HF Mistral: each query sees 8 keys

        def llama_no_head_dim(cfg):
            cfg.pop("head_dim")  # older Llama configs: head_dim = hidden / heads

        def llama_biases(cfg):
            cfg["attention_bias"] = True  # Llama's biases o_proj too
            cfg["mlp_bias"] = True

        def add_llama_biases(cfg, tensors):
            rng = np.random.RandomState(11)
            hidden, inter, d = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
            sizes = {"self_attn.q_proj": cfg["num_attention_heads"] * d,
                     "self_attn.k_proj": cfg["num_key_value_heads"] * d,
                     "self_attn.v_proj": cfg["num_key_value_heads"] * d, "self_attn.o_proj": hidden,
                     "mlp.gate_proj": inter, "mlp.up_proj": inter, "mlp.down_proj": hidden}
            for i in range(cfg["num_hidden_layers"]):
                for module, n in sizes.items():
                    tensors[f"model.layers.{i}.{module}.bias"] = (rng.randn(n) * 0.1).astype(np.float32)

        # int8 KV entries (--kv-type int8) against a reference that rounds
        # its keys and values the same way (reference.int8_kv_round), on F32
        # weights, whose tolerance would not hide unrounded entries. The tiny
        # presets' heads (16 and 32 dimensions) hold one scale group; a qwen3
        # variant with 128-dimension heads has four.
        def head_dim_128(cfg):
            cfg["head_dim"] = 128

        def widen_heads(cfg, tensors):
            rng = np.random.RandomState(13)
            d, hidden = cfg["head_dim"], cfg["hidden_size"]
            q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
            shapes = {"q_proj.weight": (q, hidden), "k_proj.weight": (kv, hidden), "v_proj.weight": (kv, hidden),
                      "o_proj.weight": (hidden, q), "q_norm.weight": (d,), "k_norm.weight": (d,)}
            for i in range(cfg["num_hidden_layers"]):
                for name, shape in shapes.items():
                    key = f"model.layers.{i}.self_attn.{name}"
                    old = tensors[key]
                    tensors[key] = (old.mean() + rng.randn(*shape) * old.std()).astype(np.float32)

        def wide_heads():
            return self.variant(self.model("qwen3", "f32"), "qwen3-head-dim-128", head_dim_128, widen_heads)

        self.test("numerics qwen3 f32 head_dim 128", lambda notes: compare(self.hearth, wide_heads(), "f32", notes))
        self.test("numerics qwen3 f32 head_dim 128 int8 KV",
                  lambda notes: compare(self.hearth, wide_heads(), "f32", notes, kv="int8"))
        for arch in ("qwen3", "mistral"):
            self.test(f"numerics {arch} f32 int8 KV",
                      lambda notes, arch=arch: compare(self.hearth, self.model(arch, "f32"), "f32", notes, kv="int8"))

        self.test("numerics llama f32 attention_bias + mlp_bias",
                  lambda notes: compare(self.hearth, self.variant(self.model("llama", "f32"), "llama-biases",
                                                                  llama_biases, add_llama_biases), "f32", notes))

        variants = [
            ("llama", "rope-linear", rope_linear),
            ("qwen2", "rope-yarn", rope_yarn),
            ("qwen3", "rope-parameters-yarn", rope_parameters_yarn),
            ("qwen2", "published-config", qwen2_published),
            ("mistral", "sliding-window-8", mistral_window),
            ("llama", "no-head_dim", llama_no_head_dim),
        ]
        for arch, name, edit in variants:
            self.test(f"numerics {arch} f32 {name}",
                      lambda notes, arch=arch, name=name, edit=edit: compare(
                          self.hearth, self.variant(self.model(arch, "f32"), f"{arch}-{name}", edit), "f32", notes))

        def stories(notes):
            m = reference.Model.load(STORIES)
            compare(self.hearth, STORIES, "f32", notes, ids=[1], max_tokens=64, model=m)
            p = run([self.hearth.path, "generate", "--model", STORIES, "--prompt-ids", "1",
                     "--max-tokens", "64", "--temperature", "0"])
            check(p.returncode == 0 and not crashed(p), f"text mode failed ({p.returncode}): {p.err.strip()[-300:]}")
            check(p.out.strip().startswith(STORIES_TEXT), f"decoded text: {p.out[:200]!r}")
        self.test("numerics stories260k greedy 64 from BOS", stories)

        # The real model quantized by the NumPy converter above (not by hearth):
        # q/k/v/o, gate/up and the tied embedding; down_proj (172 inputs) stays float.
        for bits, group in ((4, 64), (8, 32)):
            def stories_q(notes, bits=bits, group=group):
                d = mlx_convert(STORIES, os.path.join(self.tmp, f"stories-mlx{bits}-g{group}"), bits, group)
                ids = [1] + [int(t) for t in np.random.RandomState(5).randint(3, 512, PROMPT_LEN - 1)]
                compare(self.hearth, d, "mlx", notes, ids=ids, max_tokens=32)
            self.test(f"numerics stories260k mlx{bits}-g{group} (NumPy-converted)", stories_q)

    # -- embeddings -------------------------------------------------------------

    def embedding_tests(self):
        def embedding_model(arch, fmt, pooling):
            key = (arch, fmt, "embedding-" + pooling)
            if key not in self.models:
                out = os.path.join(self.tmp, f"{arch}-{fmt}-embedding-{pooling}")
                self.models[key] = self.hearth.mkmodel(out, "--arch", arch, "--preset", "tiny", "--seed", "7",
                                                       "--embedding", pooling, *FORMATS[fmt][0])
            return self.models[key]

        rng = np.random.RandomState(11)
        # Different lengths in one batch: ragged rows of hidden states.
        inputs = [[int(t) for t in rng.randint(3, 512, n)] for n in (1, 7, 40, 19)]
        for arch, fmt, pooling in (("qwen3", "f32", "last"), ("llama", "f32", "mean"),
                                   ("qwen2", "bf16", "mean"), ("qwen3", "mlx4", "last"), ("mistral", "mlx8", "mean")):
            self.test(f"embeddings {arch} {fmt} {pooling} pooling",
                      lambda notes, arch=arch, fmt=fmt, pooling=pooling: compare_embeddings(
                          self.hearth, embedding_model(arch, fmt, pooling), FORMATS[fmt][1], notes, inputs, pooling))

        def layout(notes):
            d = embedding_model("qwen3", "f32", "last")
            _, header = read_header(os.path.join(d, "model.safetensors"))
            names = set(header) - {"__metadata__"}
            check("embed_tokens.weight" in names and "norm.weight" in names, "no bare-model names")
            check(not any(n.startswith("model.") or n.startswith("lm_head") for n in names),
                  f"prefixed or head tensors: {sorted(n for n in names if n.startswith(('model.', 'lm_head')))[:3]}")
            with open(os.path.join(d, "modules.json")) as f:
                modules = json.load(f)
            pool = [m for m in modules if m["type"] == "sentence_transformers.models.Pooling"]
            check(len(pool) == 1, "modules.json has no Pooling module")
            with open(os.path.join(d, pool[0]["path"], "config.json")) as f:
                check(json.load(f)["pooling_mode_lasttoken"] is True, "1_Pooling/config.json is not last-token")
        self.test("embeddings mkmodel --embedding writes the Sentence Transformers layout", layout)

        def chat_default(notes):  # a chat checkpoint (no pooling config) pools by last token
            compare_embeddings(self.hearth, self.model("llama", "f32"), "f32", notes, inputs, "last")
        self.test("embeddings of a chat checkpoint: last token by default", chat_default)

        def matryoshka(notes):
            compare_embeddings(self.hearth, embedding_model("qwen3", "f32", "last"), "f32", notes, inputs, "last",
                               dimensions=16)
        self.test("embeddings --dimensions 16 truncates, then normalizes", matryoshka)

        def chunked(notes):
            # 700 tokens with a 512-token prefill chunk: mean pooling sums over steps.
            d = self.variant(embedding_model("llama", "f32", "mean"), "llama-embedding-long",
                             lambda cfg: cfg.update(max_position_embeddings=1024))
            for name in ("modules.json", "1_Pooling"):
                src = os.path.join(embedding_model("llama", "f32", "mean"), name)
                if os.path.isdir(src) and not os.path.exists(os.path.join(d, name)):
                    shutil.copytree(src, os.path.join(d, name))
            long = [int(t) for t in rng.randint(3, 512, 700)]
            compare_embeddings(self.hearth, d, "f32", notes, [long, inputs[1]], "mean")
        self.test("embeddings mean pooling over a 700-token input (two prefill chunks)", chunked)

        def bad(notes):
            d = embedding_model("qwen3", "f32", "last")
            for ids, extra, words in (("1,2,99999", (), ["99999", "vocabulary"]),
                                      ("1,2", ("--dimensions", "100000"), ["--dimensions"])):
                p = run([self.hearth.path, "embed", "--model", d, "--ids", ids, *extra])
                check(not crashed(p) and p.returncode > 0, f"{ids} {extra}: exit {p.returncode}")
                check(all(w in p.err for w in words), f"{ids} {extra}: {p.err.strip()[-200:]!r}")
            cfg = os.path.join(self.tmp, "max-pooling")
            if not os.path.exists(cfg):
                shutil.copytree(d, cfg)
                with open(os.path.join(cfg, "1_Pooling", "config.json"), "w") as f:
                    json.dump({"pooling_mode_max_tokens": True}, f)
            p = run([self.hearth.path, "embed", "--model", cfg, "--ids", "1,2"])
            check(not crashed(p) and p.returncode > 0 and "pooling_mode_max_tokens" in p.err,
                  f"max pooling: exit {p.returncode}: {p.err.strip()[-200:]!r}")
        self.test("embeddings bad input: ids outside the vocabulary, too many dimensions, max pooling", bad)

    # -- bad input ------------------------------------------------------------

    def bad_input_tests(self):
        def expect_error(model, substrings, ids="1,2,3", extra=()):
            p = run([self.hearth.path, "generate", "--model", model, "--prompt-ids", ids,
                     "--max-tokens", "4", "--temperature", "0", *extra])
            check(not crashed(p), f"crashed (exit {p.returncode}): {p.err.strip()[-300:]}")
            check(p.returncode > 0, f"exit status {p.returncode}, expected an error; stdout {p.out[:200]!r}")
            check(p.err.strip(), "no message on stderr")
            check(any(s in p.err for s in substrings),
                  f"stderr does not name the problem (wanted one of {substrings}): {p.err.strip()[-300:]!r}")
            return p.err.strip().splitlines()[-1]

        def copy(name):
            out = os.path.join(self.tmp, "bad-" + name)
            shutil.copytree(self.model("llama", "f32"), out)
            return out

        def edit_config(d, fn):
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            fn(cfg)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)

        def missing_dir(notes):
            d = os.path.join(self.tmp, "no-such-model")
            notes.append(expect_error(d, [d, "no-such-model"]))

        def truncated(notes):
            d = copy("truncated")
            path = os.path.join(d, "model.safetensors")
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) // 2)
            notes.append(expect_error(d, ["model.safetensors"]))

        def header_too_long(notes):
            d = copy("header-len")
            path = os.path.join(d, "model.safetensors")
            with open(path, "r+b") as f:
                f.write(struct.pack("<Q", 1 << 40))
            notes.append(expect_error(d, ["model.safetensors", "header"]))

        def offset_oob(notes):
            d = copy("offset")
            path = os.path.join(d, "model.safetensors")
            _, header = read_header(path)
            b, e = header["model.norm.weight"]["data_offsets"]
            header["model.norm.weight"]["data_offsets"] = [b + 10**9, e + 10**9]
            write_header(path, header)
            notes.append(expect_error(d, ["model.norm.weight"]))

        def bad_header_json(notes):
            d = copy("json")
            path = os.path.join(d, "model.safetensors")
            with open(path, "r+b") as f:
                f.seek(8)
                f.write(b"{\"oops\": [")
            notes.append(expect_error(d, ["model.safetensors", "header", "JSON", "json"]))

        def unknown_arch(notes):
            d = copy("arch")
            def fn(cfg):
                cfg["architectures"] = ["FrobnicatorForCausalLM"]
                cfg["model_type"] = "frobnicator"
            edit_config(d, fn)
            notes.append(expect_error(d, ["FrobnicatorForCausalLM", "frobnicator"]))

        def wrong_hidden(notes):
            d = copy("hidden")
            edit_config(d, lambda cfg: cfg.update(hidden_size=96))
            notes.append(expect_error(d, ["embed_tokens", "hidden_size", "input_layernorm", "q_proj",
                                          "model.norm"]))

        def missing_tensor(notes):
            d = copy("missing-tensor")
            path = os.path.join(d, "model.safetensors")
            _, header = read_header(path)
            del header["model.layers.1.mlp.up_proj.weight"]
            write_header(path, header)
            notes.append(expect_error(d, ["model.layers.1.mlp.up_proj.weight"]))

        def wrong_dtype(notes):
            d = copy("dtype")
            path = os.path.join(d, "model.safetensors")
            _, header = read_header(path)
            header["model.norm.weight"]["dtype"] = "I64"
            header["model.norm.weight"]["shape"] = [32]
            write_header(path, header)
            notes.append(expect_error(d, ["model.norm.weight"]))

        def quant_bits_mismatch(notes):
            d = os.path.join(self.tmp, "bad-bits")
            shutil.copytree(self.model("llama", "mlx4"), d)
            def fn(cfg):
                cfg["quantization"]["bits"] = 8
                cfg["quantization_config"]["bits"] = 8
            edit_config(d, fn)
            notes.append(expect_error(d, ["embed_tokens", "q_proj", "bits", "shape", "quantiz"]))

        def unknown_quant_mode(notes):
            d = os.path.join(self.tmp, "bad-mode")
            shutil.copytree(self.model("llama", "mlx4"), d)
            def fn(cfg):
                cfg["quantization"]["mode"] = "mxfp4"
                cfg["quantization_config"]["mode"] = "mxfp4"
            edit_config(d, fn)
            notes.append(expect_error(d, ["mxfp4"]))

        def bad_ids(notes):
            notes.append(expect_error(self.model("llama", "f32"), ["512", "99999", "range", "vocab"],
                                      ids="1,99999"))

        def unread_tensor(notes):
            # Biases a config without attention_bias does not call for: the
            # model runs without them, and says so (as transformers does).
            def add_bias(cfg, tensors):
                tensors["model.layers.0.self_attn.q_proj.bias"] = np.zeros(cfg["num_attention_heads"] * cfg["head_dim"],
                                                                           np.float32)
            d = self.variant(self.model("llama", "f32"), "llama-unread-bias", lambda cfg: None, add_bias)
            p = run([self.hearth.path, "generate", "--model", d, "--prompt-ids", "1,2", "--max-tokens", "2"])
            check(not crashed(p) and p.returncode == 0, f"exit {p.returncode}: {p.err.strip()[-300:]}")
            check("warning: 1 tensors" in p.err and "model.layers.0.self_attn.q_proj.bias" in p.err,
                  f"no warning naming the tensor: {p.err.strip()[-300:]!r}")
            notes.append(p.err.strip().splitlines()[0][:120])

        for name, fn in [("missing model dir", missing_dir), ("truncated model.safetensors", truncated),
                         ("header length past end", header_too_long), ("data offset out of bounds", offset_oob),
                         ("header not JSON", bad_header_json), ("unknown architecture", unknown_arch),
                         ("hidden_size inconsistent with tensors", wrong_hidden),
                         ("missing tensor", missing_tensor), ("wrong tensor dtype", wrong_dtype),
                         ("quantization bits disagree with shapes", quant_bits_mismatch),
                         ("unsupported quantization mode", unknown_quant_mode),
                         ("prompt id out of range", bad_ids), ("a tensor config.json does not call for", unread_tensor)]:
            self.test(f"bad input: {name}", fn)


def main():
    ap = argparse.ArgumentParser(description="hearth numerics against the NumPy reference")
    ap.add_argument("--hearth", required=True, help="path to the hearth binary")
    ap.add_argument("-k", action="append", help="run only tests whose name contains this (repeatable)")
    ap.add_argument("--big", action="store_true", help="also write the 2.5 GB llama-3.2-1b preset")
    ap.add_argument("--keep", action="store_true", help="keep the temporary models")
    ap.add_argument("-v", "--verbose", action="store_true", help="print notes for passing tests too")
    args = ap.parse_args()
    if not os.access(args.hearth, os.X_OK):
        print(f"numerics: {args.hearth} is not an executable", file=sys.stderr)
        print("numerics: 0 passed, 1 failed")
        return 1
    s = Suite(args)
    try:
        s.reference_tests()
        s.mkmodel_tests()
        s.numerics_tests()
        s.embedding_tests()
        s.bad_input_tests()
    finally:
        if args.keep:
            print(f"models kept in {s.tmp}")
        else:
            shutil.rmtree(s.tmp, ignore_errors=True)
    print(f"numerics: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
