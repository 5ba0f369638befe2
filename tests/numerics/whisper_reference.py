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

from reference import read_checkpoint

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


class Whisper:
    def __init__(self, cfg, tensors):
        self.cfg = cfg
        self.t = {k: np.asarray(v, dtype=np.float64) for k, v in tensors.items()}

    @classmethod
    def load(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
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
