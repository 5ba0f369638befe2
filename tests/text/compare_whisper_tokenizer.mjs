// Compares hearth's Whisper tokenizer (`hearth tokenize --vocab-size N`) with
// openai-whisper's, rebuilt here as whisper/tokenizer.py's get_encoding()
// builds it on the reference tiktoken (the npm package: tiktoken's Rust core
// as WASM, the same code the Python package runs): encode_ordinary over a
// corpus, decode and decode_with_timestamps over its ids and random ids,
// the special ids, sot sequence and non_speech_tokens. For gpt2.tiktoken
// (n_vocab 51864), multilingual.tiktoken (51865, 51866), and the multilingual
// ranks as a Hugging Face tokenizer.json.
//
//   node tests/text/compare_whisper_tokenizer.mjs --hearth build/hearth [--verbose]
//
// Prints `whisper tokenizer: N passed, M failed` last; exits 1 on any failure.
import fs from "node:fs";
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tiktoken } from "tiktoken/lite";
import { makeCorpus } from "./corpus.mjs";
import { runHearthTokenize, tiktokenAsTokenizerJson } from "./tokenizer_test_util.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const i = argv.indexOf("--hearth");
const hearth = path.resolve(i >= 0 ? argv[i + 1] : path.join(root, "build/hearth"));
const verbose = argv.includes("--verbose");
const audio = [path.join(root, "../shared/audio"), path.join(root, "shared/audio")].find((d) => fs.existsSync(path.join(d, "multilingual.tiktoken")));
if (!audio) {
  console.log("whisper tokenizer: shared/audio/*.tiktoken not found");
  console.log("whisper tokenizer: 0 passed, 1 failed");
  process.exit(1);
}

// whisper/tokenizer.py's LANGUAGES keys, in order.
const LANGUAGES = ("en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml cy sk te fa " +
  "lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo " +
  "tl mg as tt haw ln ha ba jw su yue").split(" ");
const PATTERN = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;

// get_encoding(name, num_languages) and the Tokenizer properties hearth has.
function whisperReference(file, nVocab) {
  const multilingual = nVocab >= 51865; // model.py
  const numLanguages = nVocab - 51765 - (multilingual ? 1 : 0);
  const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l);
  // multilingual.tiktoken's last rank is the empty token ("="), which the
  // WASM build's base64 parser rejects; BPE never yields it and it decodes to
  // nothing, so the reference leaves it out and drops its id before decoding.
  const empty = new Set(lines.filter((l) => Buffer.from(l.split(" ")[0], "base64").length === 0).map((l) => Number(l.split(" ")[1])));
  const ranks = lines.filter((l) => !empty.has(Number(l.split(" ")[1]))).join("\n");
  const names = ["<|endoftext|>", "<|startoftranscript|>", ...LANGUAGES.slice(0, numLanguages).map((l) => `<|${l}|>`), "<|translate|>", "<|transcribe|>",
    "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>", ...Array.from({ length: 1501 }, (_, k) => `<|${(k * 0.02).toFixed(2)}|>`)];
  const specials = {};
  names.forEach((n, k) => (specials[n] = lines.length + k));
  const enc = new Tiktoken(ranks, specials, PATTERN);
  const encode = (s) => Array.from(enc.encode_ordinary(s));
  const tsBegin = specials["<|0.00|>"];
  const decodeWithTimestamps = (ids) => new TextDecoder().decode(enc.decode(Uint32Array.from(ids.filter((t) => !empty.has(t)))));
  const sot = specials["<|startoftranscript|>"];
  const info = {
    vocab_size: lines.length + names.length,
    multilingual,
    num_languages: numLanguages,
    eot: specials["<|endoftext|>"],
    sot,
    translate: specials["<|translate|>"],
    transcribe: specials["<|transcribe|>"],
    sot_lm: specials["<|startoflm|>"],
    sot_prev: specials["<|startofprev|>"],
    no_speech: specials["<|nospeech|>"],
    no_timestamps: specials["<|notimestamps|>"],
    timestamp_begin: tsBegin,
    languages: Object.fromEntries(LANGUAGES.slice(0, numLanguages).map((l) => [l, specials[`<|${l}|>`]])),
    // get_tokenizer(): language "en" and task "transcribe" for multilingual models, none otherwise.
    sot_sequence: multilingual ? [sot, sot + 1, specials["<|transcribe|>"]] : [sot],
    non_speech_tokens: nonSpeechTokens(encode),
  };
  return { encode, decode: (ids) => decodeWithTimestamps(ids.filter((t) => t < tsBegin)), decodeWithTimestamps, info };
}

// Tokenizer.non_speech_tokens, line for line.
function nonSpeechTokens(encode) {
  const symbols = [...'"#()*+/:;<=>@[\\]^_`{|}~「」『』', ..."<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split(" ")];
  const miscellaneous = [..."♩♪♫♬♭♮♯"];
  const result = new Set([encode(" -")[0], encode(" '")[0]]);
  for (const symbol of [...symbols, ...miscellaneous])
    for (const tokens of [encode(symbol), encode(" " + symbol)]) if (tokens.length === 1 || miscellaneous.includes(symbol)) result.add(tokens[0]);
  return [...result].sort((a, b) => a - b);
}

// Text a speech model is asked to produce or continue, beyond the shared corpus.
const EXTRA = [
  "", " ", "  ", "\n", "\n\n\n", " \n ", "\t\t", "   leading and trailing   ", "a".repeat(5000), "supercalifragilisticexpialidocious".repeat(40),
  " Hello world.", " I'm sure they'd've known; we're fine, you'll see.", "He said 'hi' and 'bye'.", "1234567890 3.14159 1,000,000 2024-05-06",
  "♪ La la la ♪", "♪♪♪", "( SPEAKING FOREIGN LANGUAGE )", "[DAVID] Hey there,", "<<foo>> -- --- -( -[ ((x)) [[y]] {{z}}",
  "<|endoftext|><|startoftranscript|><|en|><|0.00|> text that looks special", "<|", "|>",
  "今日はいい天気ですね。", "我们今天去公园吧！", "안녕하세요, 반갑습니다.", "مرحبا بالعالم، كيف حالك؟", "שלום עולם", "Привет, мир! Как дела?",
  "Ελληνικά κείμενα", "हिन्दी पाठ का उदाहरण", "ภาษาไทยไม่มีช่องว่าง", "Mixed: English, 中文, العربية, русский 123 😀!",
  "👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽 🇫🇷", "e\u0301 n\u0303 Å", "\u00a0nbsp\u2009thin\u3000ideographic", "zero\u200bwidth", "line\u2028sep",
];

const strings = [...makeCorpus(), ...EXTRA];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-whisper-tok-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
const multi = path.join(audio, "multilingual.tiktoken");
const CASES = [
  { name: "gpt2 (English-only)", file: path.join(audio, "gpt2.tiktoken"), nVocab: 51864 },
  { name: "multilingual", file: multi, nVocab: 51865 },
  { name: "multilingual (large-v3)", file: multi, nVocab: 51866 },
  { name: "multilingual tokenizer.json", file: multi, nVocab: 51865, hf: true },
];

let passed = 0;
let failed = 0;
for (const c of CASES) {
  const ref = whisperReference(c.file, c.nVocab);
  let source = ["--tiktoken", c.file];
  if (c.hf) {
    // A Hugging Face checkpoint's layout: the ranks as byte-level BPE, the
    // specials as added tokens at openai-whisper's ids, the post-processor
    // that prepends the sot sequence.
    const specials = {};
    for (let id = ref.info.eot; id < ref.info.vocab_size; ++id) specials[ref.decodeWithTimestamps([id])] = id;
    const json = tiktokenAsTokenizerJson(c.file, specials);
    json.post_processor = { type: "TemplateProcessing", single: [{ SpecialToken: { id: "<|startoftranscript|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }], special_tokens: { "<|startoftranscript|>": { id: "<|startoftranscript|>", ids: [ref.info.sot], tokens: ["<|startoftranscript|>"] } } };
    const file = path.join(tmp, "tokenizer.json");
    fs.writeFileSync(file, JSON.stringify(json));
    source = ["--tokenizer", file];
  }
  source.push("--vocab-size", String(c.nVocab));
  let p = 0;
  let f = 0;
  let shown = 0;
  const check = (what, input, got, want) => {
    if (JSON.stringify(got) === JSON.stringify(want)) return void p++;
    f++;
    if (shown++ < (verbose ? 50 : 5))
      console.log(`  FAIL ${c.name} ${what} ${JSON.stringify(input).slice(0, 120)}\n    hearth: ${JSON.stringify(got).slice(0, 300)}\n    ref:    ${JSON.stringify(want).slice(0, 300)}`);
  };
  const run = (flags, lines) => runHearthTokenize(hearth, source, flags, lines);

  const r = spawnSync(hearth, ["tokenize", ...source, "--info"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`hearth tokenize --info failed (${r.status}): ${r.stderr}`);
  const info = JSON.parse(r.stdout);
  const sorted = (v) => (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v); // key order is not compared
  for (const key of Object.keys(ref.info)) check(`info.${key}`, key, sorted(info[key]), sorted(ref.info[key]));

  const ids = strings.map(ref.encode);
  const got = run([], strings);
  strings.forEach((s, k) => check("encode", s, got[k], ids[k]));

  // Decoding: the corpus's ids inside a transcript's frame (sot sequence,
  // timestamps, eot), then random ids over the whole vocabulary.
  let seed = 7;
  const rand = (n) => Math.floor(((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296) * n);
  const ts = () => ref.info.timestamp_begin + rand(1501);
  const seqs = ids.map((t) => [...ref.info.sot_sequence, ts(), ...t, ts(), ref.info.eot]);
  for (let k = 0; k < 400; ++k) seqs.push(Array.from({ length: 1 + rand(40) }, () => (rand(4) === 0 ? ref.info.eot + rand(ref.info.vocab_size - ref.info.eot) : rand(ref.info.eot))));
  const dec = run(["--decode"], seqs);
  const decTs = run(["--decode", "--timestamps"], seqs);
  seqs.forEach((s, k) => {
    check("decode", s, dec[k], ref.decode(s));
    check("decode --timestamps", s, decTs[k], ref.decodeWithTimestamps(s));
  });
  console.log(`${c.name}: ${p} passed, ${f} failed (${strings.length} strings, ${seqs.length} id sequences)`);
  passed += p;
  failed += f;
}
console.log(`whisper tokenizer: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
