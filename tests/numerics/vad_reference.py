"""An independent NumPy Silero VAD (v5/v6, 16 kHz) and its span rules, for test_vad.py.

The weights are read from whisper.cpp's ggml container as its
models/convert-silero-vad-to-ggml.py writes them: int32 magic 0x67676d6c, the
model type string, version, window and context sizes, layer sizes; then
tensors to the end of the file (n_dims, name length, type 0 f32 / 1 f16, dims
fastest first, name, data). The forward is silero-vad's model as its
OnnxWrapper drives it, in float64: each 512-sample window gets the previous
window's last 64 samples in front (zeros before the first), is reflect-padded
by 64 on the right, framed 4 x 256 every 128 and multiplied by the STFT basis
(magnitude of 129 bins), passes four Conv1d(k=3, pad=1) + ReLU layers with
strides 1, 2, 2, 1, one LSTM step (gates i, f, g, o; state carried across
windows), ReLU, the 1x1 output conv and a sigmoid.
"""

import struct

import numpy as np

WINDOW, CONTEXT, RATE = 512, 64, 16000


def read_ggml(path):
    """{name: float64 array in PyTorch's shape (ggml dims reversed)}."""
    b = open(path, "rb").read()
    pos = 0

    def i32():
        nonlocal pos
        (v,) = struct.unpack_from("<i", b, pos)
        pos += 4
        return v

    assert i32() == 0x67676D6C, "bad magic"
    n = i32()
    assert b[pos:pos + n] == b"silero-16k"
    pos += n
    header = [i32() for _ in range(5)]  # version x3, window, context
    assert header[3:] == [WINDOW, CONTEXT]
    layers = i32()
    pos += 4 * (3 * layers + 4)  # the layer sizes: the tensor shapes say the same
    tensors = {}
    while pos < len(b):
        n_dims, name_len, dtype = i32(), i32(), i32()
        dims = [i32() for _ in range(n_dims)]
        name = b[pos:pos + name_len].decode()
        pos += name_len
        count = int(np.prod(dims)) if dims else 1
        kind = "<f4" if dtype == 0 else "<f2"
        data = np.frombuffer(b, dtype=kind, count=count, offset=pos)
        pos += data.nbytes
        tensors[name] = data.astype(np.float64).reshape(dims[::-1] if dims else ())
    return tensors


def conv1d(x, w, b, stride):
    """x [n, c_in, t], w [c_out, c_in, 3], padding 1 -> [n, c_out, t_out]."""
    t = x.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    t_out = (t - 1) // stride + 1
    cols = np.stack([xp[:, :, s * stride:s * stride + 3] for s in range(t_out)], axis=1)
    return np.einsum("ntck,ock->not", cols, w) + b[None, :, None]


class SileroVad:
    def __init__(self, path):
        t = read_ggml(path)
        self.basis = t["_model.stft.forward_basis_buffer"][:, 0, :]  # [258, 256]
        self.encoder = [(t[f"_model.encoder.{i}.reparam_conv.weight"],
                         t[f"_model.encoder.{i}.reparam_conv.bias"], s)
                        for i, s in enumerate((1, 2, 2, 1))]
        self.w_ih = t["_model.decoder.rnn.weight_ih"]  # [512, 128]
        self.w_hh = t["_model.decoder.rnn.weight_hh"]
        self.b_ih = t["_model.decoder.rnn.bias_ih"]
        self.b_hh = t["_model.decoder.rnn.bias_hh"]
        self.w_out = t["_model.decoder.decoder.2.weight"].reshape(-1)  # [128]
        self.b_out = float(t["_model.decoder.decoder.2.bias"])

    def probabilities(self, samples):
        x = np.asarray(samples, dtype=np.float64)
        n = -(-len(x) // WINDOW)
        audio = np.concatenate([np.zeros(CONTEXT), x, np.zeros(n * WINDOW - len(x))])
        # Model inputs [n, 576], then torch's reflect pad (0, 64): [n, 640].
        inputs = np.stack([audio[i * WINDOW:i * WINDOW + CONTEXT + WINDOW] for i in range(n)])
        inputs = np.pad(inputs, ((0, 0), (0, 64)), mode="reflect")
        frames = np.stack([inputs[:, f * 128:f * 128 + 256] for f in range(4)], axis=1)
        spec = frames @ self.basis.T  # [n, 4, 258]
        h = np.sqrt(spec[..., :129] ** 2 + spec[..., 129:] ** 2).transpose(0, 2, 1)  # [n, 129, 4]
        for w, b, stride in self.encoder:
            h = np.maximum(conv1d(h, w, b, stride), 0.0)
        feats = h[:, :, 0]  # [n, 128]
        gates_x = feats @ self.w_ih.T + self.b_ih + self.b_hh
        hid, cell = np.zeros(128), np.zeros(128)
        probs = np.empty(n)
        sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
        for i in range(n):
            g = gates_x[i] + self.w_hh @ hid
            cell = sig(g[128:256]) * cell + sig(g[:128]) * np.tanh(g[256:384])
            hid = sig(g[384:]) * np.tanh(cell)
            probs[i] = sig(self.w_out @ np.maximum(hid, 0.0) + self.b_out)
        return probs


def speech_spans(probs, samples, threshold=0.5, min_speech_ms=250, min_silence_ms=100,
                 speech_pad_ms=30):
    """silero's get_speech_timestamps as whisper.cpp's whisper_vad_segments_from_probs has
    it (no maximum span; spans under 200 ms apart merged; ends clamped to `samples`),
    as [(start, end)] in seconds."""
    min_silence = RATE * min_silence_ms // 1000
    min_speech = RATE * min_speech_ms // 1000
    pad = RATE * speech_pad_ms // 1000
    neg = max(np.float32(threshold) - np.float32(0.15), np.float32(0.01))
    threshold = np.float32(threshold)
    spans, triggered, start, temp_end = [], False, 0, 0
    for i, p in enumerate(np.asarray(probs, dtype=np.float32)):
        at = i * WINDOW
        if p >= threshold and temp_end:
            temp_end = 0
        if p >= threshold and not triggered:
            triggered, start = True, at
            continue
        if p < neg and triggered:
            if not temp_end:
                temp_end = at
            if at - temp_end < min_silence:
                continue
            if temp_end - start > min_speech:
                spans.append([start, temp_end])
            triggered, temp_end = False, 0
    if triggered and samples - start > min_speech:
        spans.append([start, samples])
    i = 0
    while i + 1 < len(spans):
        if spans[i + 1][0] - spans[i][1] < RATE * 200 // 1000:
            spans[i][1] = spans[i + 1][1]
            del spans[i + 1]
        else:
            i += 1
    spans = [s for s in spans if s[1] - s[0] >= min_speech]
    for i, s in enumerate(spans):
        if i == 0:
            s[0] = max(0, s[0] - pad)
        if i + 1 < len(spans):
            gap = spans[i + 1][0] - s[1]
            grow = gap // 2 if gap < 2 * pad else pad
            s[1] = min(samples, s[1] + grow)
            spans[i + 1][0] = max(0, spans[i + 1][0] - grow)
        else:
            s[1] = min(samples, s[1] + pad)
    return [(s0 / RATE, s1 / RATE) for s0, s1 in spans]
