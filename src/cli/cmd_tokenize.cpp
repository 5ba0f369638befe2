// hearth tokenize: encode stdin to token ids (or decode ids to text) with a
// model's tokenizer. With --jsonl, each input line is one JSON string (or, with
// --decode, one JSON array of ids) and each output line answers it — the batch
// mode the tokenizer comparison tests use. With --vocab-size, the tokenizer
// is Whisper's (text/tokenizer/whisper.h) for a model of that n_vocab.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/elapsed.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/whisper.h"

namespace hearth::cli {

namespace {

const char* kUsage =
    "usage: hearth tokenize (--model DIR | --tokenizer FILE | --tiktoken FILE [--pattern RE] [--special T=ID,...])\n"
    "                       [--vocab-size N [--timestamps] [--info]]\n"
    "                       [--no-special] [--decode] [--skip-special] [--jsonl] [--stream] [--time]\n"
    "  Reads text on stdin and prints its token ids as a JSON array.\n"
    "  --tiktoken FILE  a tiktoken rank file; --pattern is its pre-tokenizer regex (default: GPT-2's),\n"
    "                   --special its special tokens, e.g. '<|endoftext|>=50256'\n"
    "  --vocab-size N  Whisper's tokenizer for a model of n_vocab N, over --tiktoken FILE\n"
    "                  (its .tiktoken file) or --tokenizer / --model (tokenizer.json); text\n"
    "                  encodes with no special tokens, --decode drops timestamps as\n"
    "                  openai-whisper does\n"
    "  --timestamps    with --vocab-size --decode: keep timestamps, as \"<|1.08|>\"\n"
    "  --info          with --vocab-size: print the special token ids and non-speech tokens\n"
    "  --decode        read a JSON array of ids and print the text\n"
    "  --no-special    do not add BOS/EOS (the post-processor's special tokens)\n"
    "  --skip-special  when decoding, drop special tokens\n"
    "  --jsonl         one JSON string per input line -> one JSON array per output line\n"
    "                  (with --decode: one JSON array in -> one JSON string out)\n"
    "  --stream        with --decode --jsonl: decode with the streaming detokenizer, one id at a\n"
    "                  time, and print the pieces as a JSON array of strings\n"
    "  --time          print load and encode timings to stderr\n";

std::string read_all(std::istream& in) { return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}; }

std::vector<int32_t> parse_ids(const nlohmann::json& j) {
  if (!j.is_array()) throw std::runtime_error("expected a JSON array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (const auto& v : j) {
    if (!v.is_number_integer()) throw std::runtime_error("token ids must be integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// JSON text of a string that may hold invalid UTF-8 (replaced by U+FFFD).
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_ids(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
  return out;
}

// Whisper's special ids, default sot sequence and non-speech tokens, for
// checking them against openai-whisper.
std::string whisper_info(const text::WhisperTokenizer& w) {
  nlohmann::json languages = nlohmann::json::object();
  for (int32_t id = w.sot() + 1; id < w.translate(); ++id)
    languages[std::string(w.language_code(id))] = id;
  const nlohmann::json j{
      {"vocab_size", w.vocab_size()},
      {"multilingual", w.multilingual()},
      {"num_languages", w.num_languages()},
      {"eot", w.eot()},
      {"sot", w.sot()},
      {"translate", w.translate()},
      {"transcribe", w.transcribe()},
      {"sot_lm", w.sot_lm()},
      {"sot_prev", w.sot_prev()},
      {"no_speech", w.no_speech()},
      {"no_timestamps", w.no_timestamps()},
      {"timestamp_begin", w.timestamp_begin()},
      {"languages", languages},
      {"sot_sequence", w.sot_sequence()},
      {"non_speech_tokens", w.non_speech_tokens()},
  };
  return j.dump();
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args(argc, argv,
            {"no-special", "decode", "skip-special", "jsonl", "stream", "time", "timestamps", "info", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"model", "tokenizer", "tiktoken", "pattern", "special", "no-special", "decode", "skip-special",
                   "jsonl", "stream", "time", "vocab-size", "timestamps", "info", "help"});
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<text::Tokenizer> tok;
  std::optional<text::WhisperTokenizer> whisper;
  if (args.has("vocab-size")) {
    const auto n_vocab = static_cast<int32_t>(args.integer("vocab-size", 0));
    if (args.has("stream")) throw std::runtime_error("--stream is not available with --vocab-size");
    if (args.has("tiktoken"))
      whisper = text::WhisperTokenizer::load_tiktoken(args.str("tiktoken"), n_vocab);
    else if (args.has("tokenizer") || args.has("model"))
      whisper = text::WhisperTokenizer::load_hf(
          args.has("tokenizer") ? std::filesystem::path(args.str("tokenizer"))
                                : std::filesystem::path(args.str("model")) / "tokenizer.json",
          n_vocab);
    else
      throw std::runtime_error(std::string("--vocab-size needs --tiktoken, --tokenizer or --model\n") + kUsage);
    if (args.has("info")) {
      std::cout << whisper_info(*whisper) << '\n';
      return 0;
    }
  } else if (args.has("tiktoken")) {
    std::vector<std::pair<std::string, int32_t>> specials;
    const std::string list = args.str("special");
    for (size_t pos = 0; pos < list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      const std::string item = list.substr(pos, comma - pos);
      const size_t eq = item.rfind('=');
      if (eq == std::string::npos || eq == 0) throw std::runtime_error("--special expects TOKEN=ID[,TOKEN=ID...]");
      specials.emplace_back(item.substr(0, eq), static_cast<int32_t>(std::stol(item.substr(eq + 1))));
      pos = comma + 1;
    }
    tok = text::Tokenizer::load_tiktoken(
        args.str("tiktoken"),
        args.str("pattern", R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"), specials);
  } else {
    std::filesystem::path path;
    if (args.has("tokenizer"))
      path = args.str("tokenizer");
    else if (args.has("model"))
      path = std::filesystem::path(args.str("model")) / "tokenizer.json";
    else
      throw std::runtime_error(std::string("give --model DIR, --tokenizer FILE or --tiktoken FILE\n") + kUsage);
    tok = text::Tokenizer::load(path);
  }
  const auto t1 = std::chrono::steady_clock::now();
  const bool add_special = !args.has("no-special");
  const bool skip_special = args.has("skip-special");
  std::function<std::vector<int32_t>(const std::string&)> encode;
  std::function<std::string(const std::vector<int32_t>&)> decode;
  if (whisper) {
    encode = [&](const std::string& s) { return whisper->encode(s); };
    decode = [&, ts = args.has("timestamps")](const std::vector<int32_t>& ids) {
      return ts ? whisper->decode_with_timestamps(ids) : whisper->decode(ids);
    };
  } else {
    encode = [&](const std::string& s) { return tok->encode(s, add_special); };
    decode = [&](const std::vector<int32_t>& ids) { return tok->decode(ids, skip_special); };
  }
  std::ios::sync_with_stdio(false);

  double encode_s = 0;
  size_t n_tokens = 0, n_bytes = 0;
  if (args.has("jsonl")) {
    std::string line, out;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line);
      if (args.has("decode")) {
        const auto ids = parse_ids(j);
        if (args.has("stream")) {
          text::StreamDecoder sd(*tok, skip_special);
          nlohmann::json pieces = nlohmann::json::array();
          for (int32_t id : ids) pieces.push_back(sd.push(id));
          pieces.push_back(sd.flush());
          out = pieces.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        } else {
          out = json_string(decode(ids));
        }
      } else {
        if (!j.is_string()) throw std::runtime_error("--jsonl expects one JSON string per line");
        const std::string& s = j.get_ref<const std::string&>();
        const auto a = std::chrono::steady_clock::now();
        const auto ids = encode(s);
        encode_s += seconds_since(a);
        n_tokens += ids.size();
        n_bytes += s.size();
        out = json_ids(ids);
      }
      out += '\n';
      std::cout << out;
    }
  } else if (args.has("decode")) {
    const auto ids = parse_ids(nlohmann::json::parse(read_all(std::cin)));
    std::cout << decode(ids);
  } else {
    const std::string s = read_all(std::cin);
    const auto a = std::chrono::steady_clock::now();
    const auto ids = encode(s);
    encode_s += seconds_since(a);
    n_tokens += ids.size();
    n_bytes += s.size();
    std::cout << json_ids(ids) << '\n';
  }
  std::cout.flush();
  if (args.has("time")) {
    std::fprintf(stderr, "load_s %.4f encode_s %.4f tokens %zu bytes %zu tokens_per_s %.0f\n",
                 std::chrono::duration<double>(t1 - t0).count(), encode_s, n_tokens, n_bytes,
                 encode_s > 0 ? static_cast<double>(n_tokens) / encode_s : 0.0);
  }
  return 0;
}

}  // namespace hearth::cli
