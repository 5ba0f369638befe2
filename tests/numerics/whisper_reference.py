#!/usr/bin/python3
"""An independent NumPy reference for Whisper's encoder and decoder.

Written from openai-whisper's model.py and Hugging Face's modeling_whisper,
and from nothing in hearth's C++ sources: it reads config.json and the
safetensors weights itself and computes in float64.

    model = Whisper.load(dir)
    features = model.encode(mel)            # mel: [n_mels, 3000]
    logits = model.decode(tokens, features) # [len(tokens), vocab], teacher-forced
    qk, logits = model.cross_attention(tokens, features)  # qk: [layers][heads, len(tokens), 1500]
"""

import json
import math
import os

import numpy as np

from reference import dequantize, read_checkpoint, read_safetensors

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    """torch's default GELU: x * Phi(x), with the exact erf."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, p):
    w, b = p
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w + b


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def conv1d(x, w, b, stride):
    """x [C_in, T], w [C_out, C_in, 3], padding 1."""
    padded = np.pad(x, ((0, 0), (1, 1)))
    t_out = (x.shape[1] + 2 - 3) // stride + 1
    out = np.zeros((w.shape[0], t_out))
    for k in range(3):
        out += w[:, :, k] @ padded[:, k : k + stride * (t_out - 1) + 1 : stride]
    return out + b[:, None]


# mlx-examples' whisper.py names (openai-whisper's) -> Hugging Face's, in order.
_MLX_TO_HF = [
    ("encoder.blocks.", "model.encoder.layers."), ("decoder.blocks.", "model.decoder.layers."),
    ("encoder.ln_post.", "model.encoder.layer_norm."), ("encoder.conv", "model.encoder.conv"),
    ("decoder.token_embedding.", "model.decoder.embed_tokens."),
    ("decoder.positional_embedding", "model.decoder.embed_positions.weight"),
    ("decoder.ln.", "model.decoder.layer_norm."),
    (".cross_attn_ln.", ".encoder_attn_layer_norm."), (".attn_ln.", ".self_attn_layer_norm."),
    (".mlp_ln.", ".final_layer_norm."), (".cross_attn.", ".encoder_attn."), (".attn.", ".self_attn."),
    (".query.", ".q_proj."), (".key.", ".k_proj."), (".value.", ".v_proj."), (".out.", ".out_proj."),
    (".mlp1.", ".fc1."), (".mlp2.", ".fc2."),
]


def sinusoids(length, channels):
    """openai-whisper's model.sinusoids."""
    increment = np.log(10000) / (channels // 2 - 1)
    inv = np.exp(-increment * np.arange(channels // 2))
    t = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


def from_mlx(cfg, tensors):
    """An MLX-layout checkpoint as the Hugging Face config and tensors."""
    quant = cfg.get("quantization") or {}
    out = {}
    for name, value in tensors.items():
        if name.endswith((".scales", ".biases")):
            continue
        module = name[: -len(".weight")] if name.endswith(".weight") else None
        if module and module + ".scales" in tensors:
            spec = quant.get(module, quant)
            value = dequantize(value, tensors[module + ".scales"], tensors[module + ".biases"],
                               spec.get("bits", 4), spec.get("group_size", 64))
        if name.startswith("encoder.conv") and name.endswith(".weight"):
            value = np.transpose(value, (0, 2, 1))  # [out][3][in] -> [out][in][3]
        for a, b in _MLX_TO_HF:
            name = name.replace(a, b, 1) if a in name else name
        out[name] = value
    out["model.encoder.embed_positions.weight"] = sinusoids(cfg["n_audio_ctx"], cfg["n_audio_state"])
    hf = {"num_mel_bins": cfg["n_mels"], "d_model": cfg["n_audio_state"],
          "encoder_layers": cfg["n_audio_layer"], "encoder_attention_heads": cfg["n_audio_head"],
          "decoder_layers": cfg["n_text_layer"], "decoder_attention_heads": cfg["n_text_head"],
          "vocab_size": cfg["n_vocab"]}
    return hf, out


class Whisper:
    def __init__(self, cfg, tensors):
        self.cfg = cfg
        self.t = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}

    @classmethod
    def load(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        if "n_audio_state" in cfg:
            return cls(*from_mlx(cfg, read_safetensors(os.path.join(model_dir, "weights.safetensors"))))
        return cls(cfg, read_checkpoint(model_dir))

    def _norm(self, name):
        return self.t[name + ".weight"], self.t[name + ".bias"]

    def _linear(self, name, x):
        y = x @ self.t[name + ".weight"].T
        bias = self.t.get(name + ".bias")
        return y if bias is None else y + bias

    def _attention(self, name, x, source, heads, causal, keep=None):
        q = self._linear(name + ".q_proj", x)
        k = self._linear(name + ".k_proj", source)
        v = self._linear(name + ".v_proj", source)
        n, d = q.shape
        hd = d // heads
        out = np.zeros_like(q)
        for h in range(heads):
            s = slice(h * hd, (h + 1) * hd)
            scores = q[:, s] @ k[:, s].T / math.sqrt(hd)
            if causal:
                scores = scores + np.triu(np.full((n, n), -np.inf), 1)
            if keep is not None:
                keep.append(scores)
            out[:, s] = softmax(scores) @ v[:, s]
        return self._linear(name + ".out_proj", out)

    def _mlp(self, prefix, x):
        return self._linear(prefix + "fc2", gelu(self._linear(prefix + "fc1", x)))

    def encode(self, mel):
        """mel [n_mels, 3000] -> [1500, d_model]."""
        t = self.t
        x = gelu(conv1d(mel, t["model.encoder.conv1.weight"], t["model.encoder.conv1.bias"], 1))
        x = gelu(conv1d(x, t["model.encoder.conv2.weight"], t["model.encoder.conv2.bias"], 2))
        x = x.T + t["model.encoder.embed_positions.weight"][: x.shape[1]]
        heads = self.cfg["encoder_attention_heads"]
        for i in range(self.cfg["encoder_layers"]):
            p = f"model.encoder.layers.{i}."
            h = layer_norm(x, self._norm(p + "self_attn_layer_norm"))
            x = x + self._attention(p + "self_attn", h, h, heads, causal=False)
            x = x + self._mlp(p, layer_norm(x, self._norm(p + "final_layer_norm")))
        return layer_norm(x, self._norm("model.encoder.layer_norm"))

    def decode(self, tokens, features, cross_qk=None):
        """Logits at every position of tokens (from position 0), teacher-forced.
        cross_qk, if a list, receives per decoder layer the cross-attention
        scores before the softmax, [heads, len(tokens), frames]."""
        t = self.t
        n = len(tokens)
        x = t["model.decoder.embed_tokens.weight"][tokens] + t["model.decoder.embed_positions.weight"][:n]
        heads = self.cfg["decoder_attention_heads"]
        for i in range(self.cfg["decoder_layers"]):
            p = f"model.decoder.layers.{i}."
            h = layer_norm(x, self._norm(p + "self_attn_layer_norm"))
            x = x + self._attention(p + "self_attn", h, h, heads, causal=True)
            h = layer_norm(x, self._norm(p + "encoder_attn_layer_norm"))
            kept = None if cross_qk is None else []
            x = x + self._attention(p + "encoder_attn", h, features, heads, causal=False, keep=kept)
            if kept is not None:
                cross_qk.append(np.stack(kept))
            x = x + self._mlp(p, layer_norm(x, self._norm(p + "final_layer_norm")))
        x = layer_norm(x, self._norm("model.decoder.layer_norm"))
        head = t.get("proj_out.weight", t["model.decoder.embed_tokens.weight"])
        return x @ head.T

    def cross_attention(self, tokens, features):
        """What openai-whisper's word-timestamp hooks read: per decoder layer,
        the cross-attention scores q k^T / sqrt(head_dim) before the softmax,
        [heads, len(tokens), frames], with the logits: (qk, logits)."""
        qk = []
        logits = self.decode(tokens, features, cross_qk=qk)
        return qk, logits
