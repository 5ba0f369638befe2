#!/usr/bin/python3
"""An independent NumPy reference for the Llama-family forward pass.

Written from the Hugging Face modeling code (modeling_llama, modeling_mistral,
modeling_qwen2, modeling_qwen3) and the MLX affine-quantization layout, and
from nothing in hearth's C++ sources: it reads config.json and the safetensors
file(s) itself, dequantizes MLX weights itself, and computes in float64 (the
stored weights are upcast exactly; only activations are computed).

Library use:
    model = Model.load(dir)
    out = model.run(prompt_ids, max_tokens)   # {"prompt_logits", "tokens", ...}

Command line:
    reference.py --model DIR --prompt-ids 1,2,3 --max-tokens N [--dump-logits F]
prints one JSON object: prompt_logits ([n_prompt][vocab], unless
--no-logits), tokens (greedy ids, stopping after an EOS id from
generation_config.json or at max tokens) and top (top-5 per generated step).
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np

ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}


# ---------------------------------------------------------------------------
# safetensors


def _bf16_to_f32(raw):
    return (raw.astype(np.uint32) << 16).view(np.float32)


def bf16_round(x):
    """x as float32, rounded to the nearest BF16 (ties to even), as float32."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return u.astype(np.uint32).view(np.float32)


def int8_kv_round(x):
    """KV entries x [tokens, heads, head_dim] as hearth's --kv-type int8
    keeps them (docs/architecture/engine.md, "KV memory"): per token, head and group of 32
    dimensions (the whole head where 32 does not divide it), in float32,
    scale = max|x| / 127 and codes rint(x / scale) (ties to even); returns
    codes * scale."""
    t, h, d = x.shape
    g = 32 if d % 32 == 0 else d
    x32 = np.asarray(x, dtype=np.float32).reshape(t, h, d // g, g)
    scale = np.abs(x32).max(axis=-1, keepdims=True) / np.float32(127)
    safe = np.where(scale > 0, scale, np.float32(1))
    codes = np.where(scale > 0, np.rint(x32 / safe), np.float32(0)).astype(np.float32)
    return (codes * scale).reshape(t, h, d)


_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # converted by _bf16_to_f32
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
    "U8": np.dtype("u1"),
    "I8": np.dtype("i1"),
}


def read_safetensors(path, dtypes=None):
    """Returns {name: ndarray} (BF16 as float32, others as stored); fills
    dtypes, when given, with each tensor's stored dtype name."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if end - begin != count * dt.itemsize or base + end > len(data):
            raise ValueError(f"{path}: tensor {name} has bad offsets")
        arr = np.frombuffer(data, dtype=dt, count=count, offset=base + begin).reshape(shape)
        if info["dtype"] == "BF16":
            arr = _bf16_to_f32(arr)
        out[name] = arr
        if dtypes is not None:
            dtypes[name] = info["dtype"]
    return out


def read_checkpoint(model_dir, dtypes=None):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for fn in files:
            tensors.update(read_safetensors(os.path.join(model_dir, fn), dtypes))
        return tensors
    return read_safetensors(os.path.join(model_dir, "model.safetensors"), dtypes)


# ---------------------------------------------------------------------------
# MLX affine dequantization


def unpack_codes(words, bits, cols):
    """uint32 [rows, cols*bits/32] -> int codes [rows, cols].

    Each row is one little-endian bit stream: stream bit k is bit k%32 of
    word k/32, and column j holds stream bits [j*bits, (j+1)*bits), lowest
    bit first (so 3/5/6-bit codes may straddle words)."""
    words = np.ascontiguousarray(words, dtype="<u4")
    rows = words.shape[0]
    if 32 % bits == 0:
        per = 32 // bits
        shifts = np.arange(per, dtype=np.uint32) * bits
        codes = (words[:, :, None] >> shifts) & np.uint32((1 << bits) - 1)
        return codes.reshape(rows, -1)[:, :cols].astype(np.int64)
    stream = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    stream = stream[:, : cols * bits].reshape(rows, cols, bits).astype(np.int64)
    return (stream << np.arange(bits)).sum(axis=2)


def dequantize(weight, scales, biases, bits, group_size):
    rows, words = weight.shape
    cols = words * 32 // bits
    if cols % group_size or scales.shape != (rows, cols // group_size):
        raise ValueError(f"quantized shapes disagree: weight {weight.shape}, scales {scales.shape}, "
                         f"bits {bits}, group {group_size}")
    q = unpack_codes(weight, bits, cols).astype(np.float64).reshape(rows, -1, group_size)
    s = scales.astype(np.float64)[:, :, None]
    b = biases.astype(np.float64)[:, :, None]
    return (q * s + b).reshape(rows, cols)


# ---------------------------------------------------------------------------
# RoPE (transformers.modeling_rope_utils)


def rope_parameters(cfg, head_dim):
    """Returns (inv_freq [head_dim/2], attention_scaling)."""
    params = cfg.get("rope_parameters")  # transformers v5 spelling
    scaling = cfg.get("rope_scaling")
    theta = cfg.get("rope_theta")
    if params:
        theta = params.get("rope_theta", theta)
        if scaling is None and params.get("rope_type", "default") != "default":
            scaling = params
    if theta is None:
        theta = 10000.0
    dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (theta ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim))
    if not scaling:
        return inv_freq, 1.0
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return inv_freq, 1.0
    if kind == "linear":
        return inv_freq / scaling["factor"], 1.0
    if kind == "llama3":
        factor = scaling["factor"]
        low = scaling["low_freq_factor"]
        high = scaling["high_freq_factor"]
        old_len = scaling["original_max_position_embeddings"]
        low_wavelen = old_len / low
        high_wavelen = old_len / high
        wavelen = 2 * math.pi / inv_freq
        out = np.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, out), 1.0
    if kind == "yarn":
        # transformers v5 semantics: an explicit factor wins; the ramp uses the
        # pre-extension context length.
        orig = scaling.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
        factor = scaling.get("factor")
        if factor is None:
            factor = cfg["max_position_embeddings"] / orig

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        attn = scaling.get("attention_factor")
        if attn is None:
            m, m_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
            attn = get_mscale(factor, m) / get_mscale(factor, m_all) if (m and m_all) else get_mscale(factor)
        beta_fast = scaling.get("beta_fast") or 32
        beta_slow = scaling.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(theta))

        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        extrap = 1 - ramp
        pos_freqs = theta ** (np.arange(0, dim, 2).astype(np.float64) / dim)
        inv = (1.0 / (factor * pos_freqs)) * (1 - extrap) + (1.0 / pos_freqs) * extrap
        return inv, float(attn)
    raise ValueError(f"unsupported rope scaling type {kind!r}")


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


# ---------------------------------------------------------------------------
# the model


def rms_norm(x, weight, eps):
    var = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(var + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


class Model:
    def __init__(self, cfg, tensors, generation_config=None, dtypes=None):
        self.cfg = cfg
        archs = cfg.get("architectures") or []
        arch = ARCHITECTURES.get(archs[0]) if archs else None
        arch = arch or cfg.get("model_type")
        if arch not in ("llama", "mistral", "qwen2", "qwen3"):
            raise ValueError(f"unsupported architecture {archs or cfg.get('model_type')!r}")
        self.arch = arch
        self.hidden = cfg["hidden_size"]
        self.n_layers = cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv = cfg.get("num_key_value_heads") or self.n_heads
        default_hd = 128 if arch == "qwen3" else self.hidden // self.n_heads  # Qwen3Config default
        self.head_dim = cfg.get("head_dim") or default_hd
        self.vocab = cfg["vocab_size"]
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.tied = cfg.get("tie_word_embeddings", False)
        self.inv_freq, self.attn_scaling = rope_parameters(cfg, self.head_dim)
        # q/k/v bias: always in Qwen2; attention_bias elsewhere (Llama's also biases o_proj).
        bias = cfg.get("attention_bias", False)
        self.qkv_bias = True if arch == "qwen2" else bias
        self.o_bias = bias if arch in ("llama", "qwen3") else False
        self.mlp_bias = cfg.get("mlp_bias", False) if arch == "llama" else False
        self.windows = self._sliding_windows()

        q = cfg.get("quantization") or cfg.get("quantization_config") or {}
        if q.get("mode", "affine") != "affine":
            raise ValueError(f"unsupported quantization mode {q.get('mode')!r}")
        self.quant = q
        self.tensors = tensors
        self.used = set()
        self.quantized = {}  # module path -> (bits, group_size)
        # Embedding checkpoints saved from the bare model (Qwen3-Embedding) drop
        # the "model." prefix and, untied, have no lm_head: hidden states only.
        bare = "model.embed_tokens.weight" not in tensors and "embed_tokens.weight" in tensors
        prefix = "" if bare else "model."
        self.embed = self._matrix(prefix + "embed_tokens", (self.vocab, self.hidden))
        # KV entries as hearth (and mlx-lm) keep them by default: in the
        # activations' dtype, which follows the stored weights: BF16 for 16-bit
        # and quantized checkpoints, F32 for F32 ones (hearth --kv-type); a
        # caller may set "int8" (int8_kv_round).
        dtypes = dtypes or {}
        stored = dtypes.get(prefix + "embed_tokens.scales") or dtypes.get(prefix + "embed_tokens.weight")
        self.kv = "bf16" if stored is not None and stored != "F32" else "f32"
        if self.tied:
            self.lm_head = self.embed
        elif bare and "lm_head.weight" not in tensors:
            self.lm_head = None
        else:
            self.lm_head = self._matrix("lm_head", (self.vocab, self.hidden))
        self.norm = self._vector(prefix + "norm.weight", self.hidden)
        H, K, D, I = self.n_heads, self.n_kv, self.head_dim, cfg["intermediate_size"]
        self.layers = []
        for i in range(self.n_layers):
            p = f"{prefix}layers.{i}."
            L = {
                "in_norm": self._vector(p + "input_layernorm.weight", self.hidden),
                "post_norm": self._vector(p + "post_attention_layernorm.weight", self.hidden),
                "q": self._matrix(p + "self_attn.q_proj", (H * D, self.hidden)),
                "k": self._matrix(p + "self_attn.k_proj", (K * D, self.hidden)),
                "v": self._matrix(p + "self_attn.v_proj", (K * D, self.hidden)),
                "o": self._matrix(p + "self_attn.o_proj", (self.hidden, H * D)),
                "gate": self._matrix(p + "mlp.gate_proj", (I, self.hidden)),
                "up": self._matrix(p + "mlp.up_proj", (I, self.hidden)),
                "down": self._matrix(p + "mlp.down_proj", (self.hidden, I)),
            }
            for name, n in (("q", H * D), ("k", K * D), ("v", K * D)):
                L[name + "_b"] = self._vector(p + f"self_attn.{name}_proj.bias", n) if self.qkv_bias else None
            L["o_b"] = self._vector(p + "self_attn.o_proj.bias", self.hidden) if self.o_bias else None
            for name, n in (("gate", I), ("up", I), ("down", self.hidden)):
                L[name + "_b"] = self._vector(p + f"mlp.{name}_proj.bias", n) if self.mlp_bias else None
            L["path"] = p
            if arch == "qwen3":
                L["q_norm"] = self._vector(p + "self_attn.q_norm.weight", D)
                L["k_norm"] = self._vector(p + "self_attn.k_norm.weight", D)
            self.layers.append(L)
        unused = set(tensors) - self.used
        if unused:
            raise ValueError(f"checkpoint has tensors the model does not use: {sorted(unused)[:5]}")
        gc = generation_config or {}
        eos = gc.get("eos_token_id", cfg.get("eos_token_id"))
        self.eos_ids = set(eos if isinstance(eos, list) else ([] if eos is None else [eos]))

    @classmethod
    def load(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        gc = None
        gpath = os.path.join(model_dir, "generation_config.json")
        if os.path.exists(gpath):
            with open(gpath) as f:
                gc = json.load(f)
        dtypes = {}
        tensors = read_checkpoint(model_dir, dtypes)
        return cls(cfg, tensors, gc, dtypes)

    def _sliding_windows(self):
        cfg = self.cfg
        window = cfg.get("sliding_window")
        if self.arch in ("qwen2", "qwen3") and not cfg.get("use_sliding_window", False):
            window = None
        types = cfg.get("layer_types")
        out = []
        for i in range(self.n_layers):
            if types is not None:
                sliding = types[i] == "sliding_attention"
            elif self.arch in ("qwen2", "qwen3"):
                sliding = window is not None and i >= cfg.get("max_window_layers", 0)
            else:
                sliding = window is not None
            out.append(window if sliding else None)
        return out

    def _take(self, name):
        if name not in self.tensors:
            raise ValueError(f"missing tensor {name}")
        self.used.add(name)
        return self.tensors[name]

    def _vector(self, name, n):
        v = self._take(name).astype(np.float64)
        if v.shape != (n,):
            raise ValueError(f"{name}: shape {v.shape}, expected ({n},)")
        return v

    def _quant_params(self, path):
        q = self.quant
        entry = q.get(path)
        if isinstance(entry, dict) and entry:
            # Keys missing from a per-module dict fall back to MLX's defaults.
            return entry.get("bits", 4), entry.get("group_size", 64)
        return q.get("bits", 4), q.get("group_size", 64)

    def _matrix(self, path, shape):
        if path + ".scales" in self.tensors:
            bits, group = self._quant_params(path)
            self.quantized[path] = (bits, group)
            w = dequantize(self._take(path + ".weight"), self._take(path + ".scales"),
                           self._take(path + ".biases"), bits, group)
        else:
            w = self._take(path + ".weight").astype(np.float64)
        if w.shape != shape:
            raise ValueError(f"{path}: shape {w.shape}, expected {shape}")
        return w

    # -- forward ------------------------------------------------------------

    def new_cache(self):
        return [{"k": np.zeros((self.n_kv, 0, self.head_dim)), "v": np.zeros((self.n_kv, 0, self.head_dim))}
                for _ in range(self.n_layers)]

    def forward(self, ids, cache, start):
        """Logits [len(ids), vocab] for tokens at positions start.. (cache extended in place)."""
        return self.hidden_states(ids, cache, start) @ self.lm_head.T

    def hidden_states(self, ids, cache, start):
        """The final-normed hidden states [len(ids), hidden] (what embeddings pool)."""
        T = len(ids)
        H, K, D = self.n_heads, self.n_kv, self.head_dim
        x = self.embed[np.asarray(ids)]
        pos = np.arange(start, start + T, dtype=np.float64)
        freqs = np.outer(pos, self.inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos = np.cos(emb) * self.attn_scaling
        sin = np.sin(emb) * self.attn_scaling

        def lin(v, w, b):
            y = v @ w.T
            return y if b is None else y + b

        for li, L in enumerate(self.layers):
            h = rms_norm(x, L["in_norm"], self.eps)
            q = lin(h, L["q"], L["q_b"]).reshape(T, H, D)
            k = lin(h, L["k"], L["k_b"]).reshape(T, K, D)
            v = lin(h, L["v"], L["v_b"]).reshape(T, K, D)
            if self.arch == "qwen3":
                q = rms_norm(q, L["q_norm"], self.eps)
                k = rms_norm(k, L["k_norm"], self.eps)
            q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
            k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
            if self.kv == "bf16":
                k, v = bf16_round(k).astype(np.float64), bf16_round(v).astype(np.float64)
            elif self.kv == "int8":
                k, v = int8_kv_round(k).astype(np.float64), int8_kv_round(v).astype(np.float64)
            c = cache[li]
            c["k"] = np.concatenate([c["k"], k.transpose(1, 0, 2)], axis=1)
            c["v"] = np.concatenate([c["v"], v.transpose(1, 0, 2)], axis=1)
            n_ctx = c["k"].shape[1]
            kpos = np.arange(n_ctx)
            qpos = np.arange(start, start + T)
            mask = kpos[None, :] <= qpos[:, None]
            if self.windows[li] is not None:
                mask &= kpos[None, :] > qpos[:, None] - self.windows[li]
            rep = H // K
            keys = np.repeat(c["k"], rep, axis=0)  # [H, n_ctx, D]  (repeat_kv)
            vals = np.repeat(c["v"], rep, axis=0)
            scores = np.einsum("thd,hsd->hts", q, keys) / math.sqrt(D)
            scores = np.where(mask[None], scores, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            attn = np.einsum("hts,hsd->thd", p, vals).reshape(T, H * D)
            x = x + lin(attn, L["o"], L["o_b"])
            h = rms_norm(x, L["post_norm"], self.eps)
            g = lin(h, L["gate"], L["gate_b"])
            u = lin(h, L["up"], L["up_b"])
            x = x + lin(silu(g) * u, L["down"], L["down_b"])
        return rms_norm(x, self.norm, self.eps)

    def run(self, prompt_ids, max_tokens, top_k=5):
        """Prefill the prompt, then greedy-decode up to max_tokens, stopping after an EOS id."""
        if not prompt_ids:
            raise ValueError("empty prompt")
        for t in prompt_ids:
            if not 0 <= t < self.vocab:
                raise ValueError(f"token id {t} out of range")
        cache = self.new_cache()
        logits = self.forward(prompt_ids, cache, 0)
        prompt_logits = logits
        last = logits[-1]
        pos = len(prompt_ids)
        tokens, tops = [], []
        for _ in range(max_tokens):
            tok = int(np.argmax(last))
            order = np.argsort(-last, kind="stable")[:top_k]
            tops.append([[int(i), float(last[i])] for i in order])
            tokens.append(tok)
            if tok in self.eos_ids:
                break
            last = self.forward([tok], cache, pos)[-1]
            pos += 1
        return {"prompt_logits": prompt_logits, "tokens": tokens, "top": tops}

    def logits_for(self, ids):
        """Logits at every position of ids, one forward pass (teacher forcing)."""
        return self.forward(list(ids), self.new_cache(), 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated ids, used verbatim")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--dump-logits", help="write prompt logits as raw little-endian float32")
    ap.add_argument("--no-logits", action="store_true", help="leave prompt_logits out of the JSON")
    a = ap.parse_args(argv)
    model = Model.load(a.model)
    ids = [int(s) for s in a.prompt_ids.split(",") if s.strip()]
    out = model.run(ids, a.max_tokens)
    if a.dump_logits:
        out["prompt_logits"].astype("<f4").tofile(a.dump_logits)
    res = {"tokens": out["tokens"], "top": out["top"]}
    if not a.no_logits:
        res["prompt_logits"] = out["prompt_logits"].tolist()
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
