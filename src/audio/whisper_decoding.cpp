#include "audio/whisper_decoding.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hearth::audio {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// log(sum(exp(x))) over a span, in double.
double log_sum_exp(std::span<const float> x) {
  float m = kNegInf;
  for (float v : x) m = std::max(m, v);
  if (m == kNegInf) return kNegInf;
  double sum = 0;
  for (float v : x) sum += std::exp(double(v) - m);
  return m + std::log(sum);
}

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at < list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(at, end - at);
    try {
      size_t used = 0;
      ids.push_back(int32_t(std::stol(item, &used)));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw std::invalid_argument("suppress_tokens: '" + item + "' is not a token id");
    }
    at = end + 1;
  }
  return ids;
}

}  // namespace

void apply_timestamp_rules(const TimestampTokens& ids, std::span<const int32_t> sampled,
                           std::span<float> row, int max_initial_index) {
  float* logits = row.data();
  const int32_t ts = ids.timestamp_begin, vocab = int32_t(row.size());
  logits[ids.no_timestamps] = kNegInf;
  const size_t n = sampled.size();
  const bool last_was_ts = n >= 1 && sampled[n - 1] >= ts;
  const bool penultimate_was_ts = n < 2 || sampled[n - 2] >= ts;
  if (last_was_ts) {
    if (penultimate_was_ts)  // a pair is closed: text must follow
      std::fill(logits + ts, logits + vocab, kNegInf);
    else  // a pair is open: only its closing timestamp or the end
      std::fill(logits, logits + ids.eot, kNegInf);
  }
  int32_t last_ts = -1;
  for (int32_t id : sampled)
    if (id >= ts) last_ts = id;
  if (last_ts >= 0) {
    // Timestamps never decrease, and a segment has a nonzero length.
    const int32_t floor = last_was_ts && !penultimate_was_ts ? last_ts : last_ts + 1;
    std::fill(logits + ts, logits + std::min(floor, vocab), kNegInf);
  }
  if (n == 0) {
    std::fill(logits, logits + ts, kNegInf);  // start with a timestamp
    const int32_t last_allowed = ts + max_initial_index;
    if (last_allowed + 1 < vocab) std::fill(logits + last_allowed + 1, logits + vocab, kNegInf);
  }
  // If the timestamps together are likelier than any text token, take one.
  const double ts_mass = log_sum_exp(std::span<const float>(logits + ts, size_t(vocab - ts)));
  float max_text = kNegInf;
  for (int32_t id = 0; id < ts; ++id) max_text = std::max(max_text, logits[id]);
  if (ts_mass > double(max_text)) std::fill(logits, logits + ts, kNegInf);
}

float compression_ratio(const std::string& text) {
  if (text.empty()) return 0;
  uLongf size = compressBound(uLong(text.size()));
  std::vector<Bytef> out(size);
  if (compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()), uLong(text.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK)
    throw std::runtime_error("zlib could not compress the text");
  return float(double(text.size()) / double(size));
}

WindowDecoder::WindowDecoder(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                             ThreadPool& pool)
    : model_(model), tokenizer_(tokenizer), pool_(pool) {}

std::string WindowDecoder::detect_language(const WhisperModel::CrossKv& cross) {
  if (!tokenizer_.multilingual()) return "en";
  WhisperModel::Sequence seq = model_.new_sequence();
  const int32_t sot = tokenizer_.sot();
  const WhisperModel::Row row{&seq, std::span(&sot, 1), false};
  model_.decode(pool_, cross, std::span(&row, 1), logits_);
  int32_t best = -1;
  for (int32_t id = sot + 1; id < sot + 1 + tokenizer_.num_languages(); ++id)
    if (best < 0 || logits_[size_t(id)] > logits_[size_t(best)]) best = id;
  return std::string(tokenizer_.language_code(best));
}

std::vector<int32_t> WindowDecoder::suppressed(const DecodingOptions& options) const {
  std::vector<int32_t> ids = parse_ids(options.suppress_tokens);
  if (std::find(ids.begin(), ids.end(), -1) != ids.end()) {
    std::erase_if(ids, [](int32_t id) { return id < 0; });
    const std::vector<int32_t> non_speech = tokenizer_.non_speech_tokens();
    ids.insert(ids.end(), non_speech.begin(), non_speech.end());
  }
  const auto& t = tokenizer_;
  ids.insert(ids.end(), {t.transcribe(), t.translate(), t.sot(), t.sot_prev(), t.sot_lm(), t.no_speech()});
  for (int32_t id : ids)
    if (id < 0 || id >= model_.config().vocab_size)
      throw std::invalid_argument("suppress_tokens: " + std::to_string(id) +
                                  " is outside the vocabulary");
  return ids;
}

DecodingResult WindowDecoder::decode(const WhisperModel::CrossKv& cross,
                                     const DecodingOptions& options, std::mt19937_64& rng,
                                     const StepObserver& observe) {
  const auto& t = tokenizer_;
  const int vocab = model_.config().vocab_size, n_ctx = model_.config().text_ctx;
  std::vector<int32_t> tokens;
  if (!options.prompt.empty()) {
    tokens.push_back(t.sot_prev());
    const size_t keep = std::min(options.prompt.size(), size_t(n_ctx / 2 - 1));
    tokens.insert(tokens.end(), options.prompt.end() - ptrdiff_t(keep), options.prompt.end());
  }
  const size_t sot_index = tokens.size();
  const std::vector<int32_t> start = t.sot_sequence(options.language, options.task);
  tokens.insert(tokens.end(), start.begin(), start.end());
  if (options.without_timestamps) tokens.push_back(t.no_timestamps());
  const size_t sample_begin = tokens.size();
  const int sample_len = options.sample_len > 0 ? options.sample_len : n_ctx / 2;
  const std::vector<int32_t> suppress = suppressed(options);
  const std::vector<int32_t> blank = {t.encode(" ").at(0), t.eot()};
  const int max_initial_index = int(std::lround(options.max_initial_timestamp / 0.02f));

  DecodingResult result;
  result.temperature = options.temperature;
  WhisperModel::Sequence seq = model_.new_sequence();
  double sum_logprob = 0;
  std::vector<float> filtered(static_cast<size_t>(vocab));
  for (int step = 0; step < sample_len && int(tokens.size()) <= n_ctx; ++step) {
    // The first step runs the whole start sequence, with logits everywhere
    // (the no-speech probability is read at <|startoftranscript|>).
    const std::span<const int32_t> fresh =
        std::span(tokens).subspan(step == 0 ? 0 : tokens.size() - 1);
    const WhisperModel::Row row{&seq, fresh, step == 0};
    model_.decode(pool_, cross, std::span(&row, 1), logits_);
    const float* logits = logits_.data() + logits_.size() - size_t(vocab);
    if (step == 0) {
      const float* at_sot = logits_.data() + sot_index * size_t(vocab);
      const std::span<const float> row_sot(at_sot, size_t(vocab));
      result.no_speech_prob =
          float(std::exp(double(at_sot[t.no_speech()]) - log_sum_exp(row_sot)));
    }
    std::copy_n(logits, vocab, filtered.data());
    if (step == 0 && options.suppress_blank)
      for (int32_t id : blank) filtered[size_t(id)] = kNegInf;
    for (int32_t id : suppress) filtered[size_t(id)] = kNegInf;
    if (!options.without_timestamps)
      apply_timestamp_rules({t.eot(), t.no_timestamps(), t.timestamp_begin()},
                            std::span(tokens).subspan(sample_begin), filtered, max_initial_index);

    int32_t next = 0;
    if (options.temperature == 0) {
      next = int32_t(std::max_element(filtered.begin(), filtered.end()) - filtered.begin());
    } else {
      std::vector<double> weights(filtered.size());
      const float top = *std::max_element(filtered.begin(), filtered.end());
      for (size_t i = 0; i < filtered.size(); ++i)
        weights[i] = std::exp(double(filtered[i] - top) / options.temperature);
      next = int32_t(std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng));
    }
    if (observe) observe(step, std::span(logits, size_t(vocab)), next);
    sum_logprob += double(filtered[size_t(next)]) - log_sum_exp(filtered);
    if (next == t.eot()) break;
    tokens.push_back(next);
  }
  result.tokens.assign(tokens.begin() + ptrdiff_t(sample_begin), tokens.end());
  result.text = t.decode(result.tokens);
  const size_t begin = result.text.find_first_not_of(" \t\n\r\f\v");
  result.text = begin == std::string::npos
                    ? std::string()
                    : result.text.substr(begin, result.text.find_last_not_of(" \t\n\r\f\v") + 1 - begin);
  result.avg_logprob = float(sum_logprob / double(result.tokens.size() + 1));
  result.compression_ratio = compression_ratio(result.text);
  return result;
}

}  // namespace hearth::audio
