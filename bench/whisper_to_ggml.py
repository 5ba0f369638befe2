#!/usr/bin/python3
"""A hearth Whisper checkpoint (Hugging Face layout) as whisper.cpp's GGML file.

    whisper_to_ggml.py MODEL_DIR MEL_FILTERS.npz OUT.bin [f16|f32]

The legacy format whisper.cpp loads, as its models/convert-h5-to-ggml.py
writes it (no torch here: the weights come from reference.py's safetensors
reader): magic 'ggml', hparams, the mel filterbank, the text vocabulary of
the .tiktoken file in rank order (whisper.cpp adds the specials itself, as
hearth does, from n_vocab), then each tensor under openai-whisper's name with
its dimensions reversed. f16 stores the matrices and convolutions in F16 and
the vectors, conv biases and positional embeddings in F32, as the original
converter does; BF16 weights become F16 (bf16's 8-bit mantissa fits, only
magnitudes under F16's smallest normal, 6e-5, lose bits). f32 stores all in
F32, which this whisper.cpp (1.9.1) loads but cannot run on the CPU: its
convolution's im2col takes F16 kernels only. The output head is the tied
embedding in both engines, so it is not written.
"""

import base64
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "numerics"))
from reference import read_checkpoint  # noqa: E402

# Hugging Face's names -> openai-whisper's (convert-h5-to-ggml.py's conv_map).
_LAYER = {
    "self_attn.q_proj": "attn.query", "self_attn.k_proj": "attn.key",
    "self_attn.v_proj": "attn.value", "self_attn.out_proj": "attn.out",
    "self_attn_layer_norm": "attn_ln",
    "encoder_attn.q_proj": "cross_attn.query", "encoder_attn.k_proj": "cross_attn.key",
    "encoder_attn.v_proj": "cross_attn.value", "encoder_attn.out_proj": "cross_attn.out",
    "encoder_attn_layer_norm": "cross_attn_ln",
    "fc1": "mlp.0", "fc2": "mlp.2", "final_layer_norm": "mlp_ln",
}
_TOP = {
    "encoder.layer_norm.bias": "encoder.ln_post.bias",
    "encoder.layer_norm.weight": "encoder.ln_post.weight",
    "encoder.embed_positions.weight": "encoder.positional_embedding",
    "decoder.layer_norm.bias": "decoder.ln.bias",
    "decoder.layer_norm.weight": "decoder.ln.weight",
    "decoder.embed_positions.weight": "decoder.positional_embedding",
    "decoder.embed_tokens.weight": "decoder.token_embedding.weight",
}
_F32_ALWAYS = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding",
               "decoder.positional_embedding"}


def openai_name(hf):
    parts = hf.removeprefix("model.").split(".")
    if parts[1] == "layers":  # encoder.layers.3.fc1.weight -> encoder.blocks.3.mlp.0.weight
        return ".".join([parts[0], "blocks", parts[2], _LAYER[".".join(parts[3:-1])], parts[-1]])
    name = ".".join(parts)
    return _TOP.get(name, name)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    model_dir, filters_path, out_path = sys.argv[1:4]
    f16 = (sys.argv[4] if len(sys.argv) == 5 else "f16") == "f16"
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    tensors = read_checkpoint(model_dir)
    if "proj_out.weight" in tensors:
        sys.exit("an untied output head: whisper.cpp always uses the token embedding")
    vocab_files = [n for n in os.listdir(model_dir) if n.endswith(".tiktoken")]
    if len(vocab_files) != 1:
        sys.exit(f"{model_dir}: expected one .tiktoken vocabulary")
    with open(os.path.join(model_dir, vocab_files[0])) as f:
        ranks = sorted((int(r), base64.b64decode(t)) for t, r in (l.split() for l in f if l.strip()))
    filters = np.load(filters_path)[f"mel_{c['num_mel_bins']}"].astype(np.float32)

    with open(out_path, "wb") as out:
        out.write(struct.pack("<i", 0x67676D6C))
        for v in (c["vocab_size"], c["max_source_positions"], c["d_model"],
                  c["encoder_attention_heads"], c["encoder_layers"], c["max_target_positions"],
                  c["d_model"], c["decoder_attention_heads"], c["decoder_layers"],
                  c["num_mel_bins"], 1 if f16 else 0):
            out.write(struct.pack("<i", v))
        out.write(struct.pack("<ii", *filters.shape))
        out.write(filters.tobytes())
        out.write(struct.pack("<i", len(ranks)))
        for _, token in ranks:
            out.write(struct.pack("<i", len(token)))
            out.write(token)
        for hf, data in tensors.items():
            name = openai_name(hf)
            if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                data = data.reshape(-1, 1)
            half = f16 and data.ndim >= 2 and name not in _F32_ALWAYS
            data = np.ascontiguousarray(data, dtype=np.float16 if half else np.float32)
            encoded = name.encode()
            out.write(struct.pack("<iii", data.ndim, len(encoded), 1 if half else 0))
            out.write(struct.pack(f"<{data.ndim}i", *reversed(data.shape)))
            out.write(encoded)
            out.write(data.tobytes())


if __name__ == "__main__":
    main()
