// Helpers shared by the tokenizer comparisons (compare_tokenizers.mjs,
// compare_whisper_tokenizer.mjs).
import fs from "node:fs";
import { spawnSync } from "node:child_process";

// A tiktoken rank file as the equivalent byte-level BPE tokenizer.json
// (merges recovered from the ranks), with `specials` as added tokens.
export function tiktokenAsTokenizerJson(file, specials) {
  const bs = [];
  for (let b = 33; b <= 126; ++b) bs.push(b);
  for (let b = 161; b <= 172; ++b) bs.push(b);
  for (let b = 174; b <= 255; ++b) bs.push(b);
  const byteChar = new Array(256);
  bs.forEach((b) => (byteChar[b] = String.fromCharCode(b)));
  let n = 0;
  for (let b = 0; b < 256; ++b) if (byteChar[b] === undefined) byteChar[b] = String.fromCharCode(256 + n++);
  const level = (latin1) => Array.from(latin1, (c) => byteChar[c.charCodeAt(0)]).join("");
  const tokens = [];
  const ranks = new Map();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line) continue;
    const [b64, r] = line.split(" ");
    const bytes = Buffer.from(b64, "base64").toString("latin1");
    tokens[Number(r)] = bytes;
    ranks.set(bytes, Number(r));
  }
  const vocab = {};
  const merges = [];
  tokens.forEach((t, r) => {
    vocab[level(t)] = r;
    if (t.length < 2) return;
    let parts = Array.from(t);
    for (;;) {
      let best = -1;
      let bestRank = r;
      for (let i = 0; i + 1 < parts.length; ++i) {
        const rank = ranks.get(parts[i] + parts[i + 1]);
        if (rank !== undefined && rank < bestRank) [best, bestRank] = [i, rank];
      }
      if (best < 0) break;
      parts.splice(best, 2, parts[best] + parts[best + 1]);
    }
    if (parts.length === 2) merges.push([level(parts[0]), level(parts[1])]);
  });
  return {
    version: "1.0",
    added_tokens: Object.entries(specials).map(([content, id]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: { type: "BPE", vocab, merges, unk_token: null, fuse_unk: false, byte_fallback: false, ignore_merges: false },
  };
}

// Runs `hearth tokenize SOURCE --jsonl FLAGS` on `lines` (JSON values, one
// per line) and returns its answers, one per line.
export function runHearthTokenize(hearth, source, flags, lines) {
  const r = spawnSync(hearth, ["tokenize", ...source, "--jsonl", ...flags], {
    input: lines.map((l) => JSON.stringify(l)).join("\n") + "\n",
    maxBuffer: 1 << 30,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`hearth ${flags.join(" ")} failed (${r.status}): ${r.stderr}`);
  const out = r.stdout.split("\n");
  out.pop();
  if (out.length !== lines.length) throw new Error(`hearth returned ${out.length} lines for ${lines.length}`);
  return out.map((l) => JSON.parse(l));
}
