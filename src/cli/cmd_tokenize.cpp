// hearth tokenize: encode stdin to token ids (or decode ids to text) with a
// model's tokenizer. With --jsonl, each input line is one JSON string (or, with
// --decode, one JSON array of ids) and each output line answers it — the batch
// mode the tokenizer comparison tests use.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "text/tokenizer.h"

namespace hearth::cli {

namespace {

const char* kUsage =
    "usage: hearth tokenize (--model DIR | --tokenizer FILE | --tiktoken FILE [--pattern RE] [--special T=ID,...])\n"
    "                       [--no-special] [--decode] [--skip-special] [--jsonl] [--stream] [--time]\n"
    "  Reads text on stdin and prints its token ids as a JSON array.\n"
    "  --tiktoken FILE  a tiktoken rank file; --pattern is its pre-tokenizer regex (default: GPT-2's),\n"
    "                   --special its special tokens, e.g. '<|endoftext|>=50256'\n"
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

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args args(argc, argv, {"no-special", "decode", "skip-special", "jsonl", "stream", "time", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.allow_only({"model", "tokenizer", "tiktoken", "pattern", "special", "no-special", "decode", "skip-special",
                   "jsonl", "stream", "time", "help"});
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<text::Tokenizer> tok;
  if (args.has("tiktoken")) {
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
          out = json_string(tok->decode(ids, skip_special));
        }
      } else {
        if (!j.is_string()) throw std::runtime_error("--jsonl expects one JSON string per line");
        const std::string& s = j.get_ref<const std::string&>();
        const auto a = std::chrono::steady_clock::now();
        const auto ids = tok->encode(s, add_special);
        encode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
        n_tokens += ids.size();
        n_bytes += s.size();
        out = json_ids(ids);
      }
      out += '\n';
      std::cout << out;
    }
  } else if (args.has("decode")) {
    const auto ids = parse_ids(nlohmann::json::parse(read_all(std::cin)));
    std::cout << tok->decode(ids, skip_special);
  } else {
    const std::string s = read_all(std::cin);
    const auto a = std::chrono::steady_clock::now();
    const auto ids = tok->encode(s, add_special);
    encode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
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
