// Deterministic test corpus for the tokenizer comparison: prose, code, many
// scripts, emoji sequences, combining marks, whitespace runs, digits, special
// token strings inside user text, and edge cases. `node tests/text/corpus.mjs`
// writes it as JSONL (one JSON string per line) to stdout.
import { fileURLToPath } from "node:url";

function rng(seed) {
  // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROSE = [
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.",
  "The quick brown fox jumps over the lazy dog.",
  "It's a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife.",
  "I can't believe they've done it again! Don't you think we'd better go? You're right, I'll call.",
  "Dr. Smith arrived at 3:45 p.m.; the meeting (which was scheduled for 3:00) had already started...",
  "\"Hello,\" she said. 'Goodbye,' he replied — and that was that.",
  "In 1492, Columbus sailed the ocean blue. In 2024, prices rose 3.5% year-over-year.",
  "E-mail me at someone@example.com or visit https://example.org/path?q=1&r=two#frag.",
  "THE END. the end. The End. tHe EnD.",
  "Mr. O'Neil's cat—named \"Whiskers\"—ate 12½ cans of tuna.",
  "naïve café résumé coöperate jalapeño façade über straße",
];

const CODE = [
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
  "const x = await fetch(`/api/${id}`).then((r) => r.json());",
  "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
  "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}",
  "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC;",
  "<div class=\"box\"><p>Hello &amp; welcome</p></div>",
  "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
  "x = [i**2 for i in range(10) if i % 2 == 0]  # squares\n",
  "    indented with spaces\n\t\tand tabs\n  \t mixed\n",
  "git commit -m 'fix: handle CRLF'\r\nnpm install --save-dev @types/node\r\n",
];

const SCRIPTS = [
  "你好，世界！今天天气很好。我们去公园散步吧。",
  "日本語のテキストです。カタカナとひらがな、そして漢字。",
  "한국어 문장입니다. 안녕하세요!",
  "مرحبا بالعالم! هذه جملة باللغة العربية.",
  "नमस्ते दुनिया! यह हिंदी में एक वाक्य है।",
  "สวัสดีชาวโลก นี่คือประโยคภาษาไทย",
  "Привет, мир! Это предложение на русском языке.",
  "Γειά σου Κόσμε! ΟΔΥΣΣΕΥΣ ὀδυσσεύς",
  "שלום עולם! זה משפט בעברית.",
  "Xin chào thế giới! Đây là một câu tiếng Việt.",
  "ሰላም ልዑል! ይህ የአማርኛ ዓረፍተ ነገር ነው።",
  "გამარჯობა მსოფლიო!",
  "Բարեւ աշխարհ",
  "வணக்கம் உலகம்",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒜𝒷𝒸 𝟙𝟚𝟛",
  "ﬁﬂ ＡＢＣ ｱｲｳ ① ½ ™ ㎏ ㈱",
  "İstanbul ıi İI ǅ ΣΑΣ ΌΣΟΣ",
];

const EMOJI = [
  "😀😃😄😁", "👍🏻👍🏼👍🏽👍🏾👍🏿", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "👩🏽‍💻 coding", "🇺🇸🇯🇵🇩🇪",
  "❤️ ♥ ❤", "🧑‍🤝‍🧑", "1️⃣ #️⃣", "🫠🫶", "emoji at end 🎉", "🐈‍⬛ black cat",
];

const COMBINING = [
  "e\u0301 a\u0300 o\u0308 n\u0303", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319a\u0335lgo",
  "\u0915\u094d\u0937", "a\u0308\u0304\u0301", "\u1100\u1161\u11a8", "Å Å Å", "\u0041\u030a\u0301",
];

const SPECIALS = [
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
  "<|end_header_id|>", "<|reserved_special_token_5|>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
  "<s>", "</s>", "<unk>", "<pad>", "<think>", "</think>", "<mask>", "[CLS]", "[SEP]", "<|fim_prefix|>",
  "<image_soft_token>", "<unused12>", "<0x41>", "<tool>", "hello world", "Hello World",
];

const WHITESPACE = [" ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\n\n\n\n", " \n ", "\u00a0",
  "\u3000", "\u2009", "\u200b", "\u2028", "\u0085", "\ufeff", "\v", "\f"];

function digits(r) {
  const len = 1 + Math.floor(r() * 24);
  let s = "";
  for (let i = 0; i < len; ++i) s += String(Math.floor(r() * 10));
  return s;
}

function pick(r, arr) {
  return arr[Math.floor(r() * arr.length)];
}

export function makeCorpus() {
  const r = rng(12345);
  const out = [];
  const add = (s) => out.push(s);
  // Edge cases.
  ["", " ", "a", "\n", "  ", "\t", "\u2581", "▁▁", " leading", "trailing ", "'s", "'S", "I'M", "'ll've",
   "A", "AB", "...", "!!!", "???", "a.b,c;d", "xyz", "<", ">", "<>", "<<s>>", "< s>", "0", "00", "007"].forEach(add);
  // Each fragment alone.
  [...PROSE, ...CODE, ...SCRIPTS, ...EMOJI, ...COMBINING, ...SPECIALS, ...WHITESPACE].forEach(add);
  // Digits of every length, alone and in context.
  for (let n = 1; n <= 40; ++n) {
    let s = "";
    for (let i = 0; i < n; ++i) s += String((i * 7 + n) % 10);
    add(s);
    add(`x${s}y`);
    add(` ${s} `);
    add(`${s}.${s.slice(0, 3)}`);
  }
  // Whitespace runs of many lengths and kinds.
  for (let n = 1; n <= 40; n += 3) {
    add(" ".repeat(n));
    add("a" + " ".repeat(n) + "b");
    add("\t".repeat(n) + "x");
    add("x" + "\n".repeat(n));
    add("word" + " ".repeat(n) + "\n" + " ".repeat(n) + "word");
    add("\r\n".repeat(n));
  }
  add(" ".repeat(300));
  add("\n".repeat(100) + "end");
  // Special tokens inside user text.
  for (const sp of SPECIALS) {
    add(`before ${sp} after`);
    add(`${sp}text`);
    add(`text${sp}`);
    add(`${sp}${sp}`);
    add(` ${sp} `);
    add(`\n${sp}\n`);
  }
  // Random mixtures.
  const pools = [PROSE, CODE, SCRIPTS, EMOJI, COMBINING, SPECIALS, WHITESPACE];
  while (out.length < 2400) {
    const k = 1 + Math.floor(r() * 6);
    let s = "";
    for (let i = 0; i < k; ++i) {
      const roll = r();
      if (roll < 0.12) s += digits(r);
      else if (roll < 0.2) s += pick(r, WHITESPACE).repeat(1 + Math.floor(r() * 5));
      else {
        const pool = pick(r, pools);
        let frag = pick(r, pool);
        if (frag.length > 12 && r() < 0.5) {
          // a random slice, by code points
          const cps = Array.from(frag);
          const a = Math.floor(r() * cps.length), b = a + 1 + Math.floor(r() * (cps.length - a));
          frag = cps.slice(a, b).join("");
        }
        s += frag;
      }
      if (r() < 0.5) s += pick(r, [" ", "", "\n", ", ", ". "]);
    }
    if (r() < 0.1) s = s.toUpperCase();
    add(s);
  }
  // A few long documents.
  for (let d = 0; d < 8; ++d) {
    let s = "";
    while (s.length < 4000) s += pick(r, pick(r, pools)) + pick(r, [" ", "\n", "\n\n", "  "]);
    add(s);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const s of makeCorpus()) process.stdout.write(JSON.stringify(s) + "\n");
}
