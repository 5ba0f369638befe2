#include "audio/whisper_decoding.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/simd_sampling.h"

namespace hearth::audio {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

double log_sum_exp(std::span<const float> x) {
  return simd::log_sum_exp(x.data(), int64_t(x.size()));
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
  ids.insert(ids.end(),
             {t.transcribe(), t.translate(), t.sot(), t.sot_prev(), t.sot_lm(), t.no_speech()});
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
  std::vector<int32_t> initial;
  if (!options.prompt.empty()) {
    initial.push_back(t.sot_prev());
    const size_t keep = std::min(options.prompt.size(), size_t(n_ctx / 2 - 1));
    initial.insert(initial.end(), options.prompt.end() - ptrdiff_t(keep), options.prompt.end());
  }
  const size_t sot_index = initial.size();
  const std::vector<int32_t> start = t.sot_sequence(options.language, options.task);
  initial.insert(initial.end(), start.begin(), start.end());
  if (options.without_timestamps) initial.push_back(t.no_timestamps());
  const size_t sample_begin = initial.size();
  const int sample_len = options.sample_len > 0 ? options.sample_len : n_ctx / 2;
  const std::vector<int32_t> suppress = suppressed(options);
  const std::vector<int32_t> blank = {t.encode(" ").at(0), t.eot()};
  const int max_initial_index = int(std::lround(options.max_initial_timestamp / 0.02f));
  // openai-whisper decodes a group per window: beam_size beams at
  // temperature 0, best_of samples above it, else one sequence.
  const bool beam = options.beam_size > 1 && options.temperature == 0;
  const int group = beam                      ? options.beam_size
                    : options.temperature > 0 ? std::max(1, options.best_of)
                                              : 1;
  if (beam && !(options.patience > 0)) throw std::invalid_argument("patience must be positive");
  const size_t max_candidates = size_t(std::lround(group * options.patience));

  DecodingResult result;
  result.temperature = options.temperature;
  // Rows: each candidate's tokens, cumulative log-probability and cache.
  std::vector<std::vector<int32_t>> tokens(size_t(group), initial);
  std::vector<double> sum_logprob(size_t(group), 0.0);
  std::vector<WhisperModel::Sequence> seqs, spare;
  for (int g = 0; g < group; ++g) seqs.push_back(model_.new_sequence());
  if (beam)
    for (int g = 0; g < group; ++g) spare.push_back(model_.new_sequence());
  std::vector<bool> done(size_t(group), false);     // sampled rows that reached the end
  std::map<std::vector<int32_t>, double> finished;  // beam search's complete candidates
  std::vector<float> filtered(size_t(vocab) * size_t(group));

  for (int step = 0; step < sample_len && int(tokens[0].size()) <= n_ctx; ++step) {
    if (step == 0) {
      // The start sequence once, in two parts so that only the two logits
      // rows used are computed: up to <|startoftranscript|> (where the
      // no-speech probability is read), then the rest (whose last row gives
      // the first token). The other rows copy it.
      const std::span<const int32_t> start_seq(initial);
      const WhisperModel::Row to_sot{&seqs[0], start_seq.first(sot_index + 1), false};
      model_.decode(pool_, cross, std::span(&to_sot, 1), logits_);
      result.no_speech_prob =
          float(std::exp(double(logits_[size_t(t.no_speech())]) - log_sum_exp(logits_)));
      if (initial.size() > sot_index + 1) {
        const WhisperModel::Row rest{&seqs[0], start_seq.subspan(sot_index + 1), false};
        model_.decode(pool_, cross, std::span(&rest, 1), logits_);
      }
      for (int g = 1; g < group; ++g) {
        model_.copy_sequence(seqs[0], seqs[size_t(g)]);
        logits_.insert(logits_.end(), logits_.begin(), logits_.begin() + vocab);
      }
    } else {
      std::vector<WhisperModel::Row> rows;
      std::vector<int> row_of(size_t(group), -1);
      for (int g = 0; g < group; ++g) {
        if (done[size_t(g)]) continue;
        row_of[size_t(g)] = int(rows.size());
        rows.push_back({&seqs[size_t(g)], std::span(tokens[size_t(g)]).last(1), false});
      }
      model_.decode(pool_, cross, rows, logits_);
      // Back to one logits row per group member (finished rows get none).
      std::vector<float> all(size_t(vocab) * size_t(group), 0.0f);
      for (int g = 0; g < group; ++g)
        if (row_of[size_t(g)] >= 0)
          std::copy_n(logits_.begin() + ptrdiff_t(row_of[size_t(g)]) * vocab, vocab,
                      all.begin() + ptrdiff_t(g) * vocab);
      logits_.swap(all);
    }
    for (int g = 0; g < group; ++g) {
      if (done[size_t(g)]) continue;
      float* row = &filtered[size_t(g) * size_t(vocab)];
      std::copy_n(logits_.begin() + ptrdiff_t(g) * vocab, vocab, row);
      if (step == 0 && options.suppress_blank)
        for (int32_t id : blank) row[id] = kNegInf;
      for (int32_t id : suppress) row[id] = kNegInf;
      if (!options.without_timestamps)
        apply_timestamp_rules({t.eot(), t.no_timestamps(), t.timestamp_begin()},
                              std::span(tokens[size_t(g)]).subspan(sample_begin),
                              std::span(row, size_t(vocab)), max_initial_index);
    }

    if (!beam) {
      bool all_done = true;
      for (int g = 0; g < group; ++g) {
        if (done[size_t(g)]) continue;
        const std::span<const float> row(&filtered[size_t(g) * size_t(vocab)], size_t(vocab));
        int32_t next = 0;
        if (options.temperature == 0) {
          next = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
        } else {
          std::vector<double> weights(row.size());
          const float top = *std::max_element(row.begin(), row.end());
          for (size_t i = 0; i < row.size(); ++i)
            weights[i] = std::exp(double(row[i] - top) / options.temperature);
          next = int32_t(std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng));
        }
        if (observe && g == 0) observe(step, std::span(logits_.data(), size_t(vocab)), next);
        sum_logprob[size_t(g)] += double(row[size_t(next)]) - log_sum_exp(row);
        if (next == t.eot())
          done[size_t(g)] = true;
        else
          tokens[size_t(g)].push_back(next);
        all_done = all_done && done[size_t(g)];
      }
      if (all_done) break;
      continue;
    }

    // Beam search (BeamSearchDecoder.update): the top beam_size + 1 tokens
    // of each beam, ranked together; ends go to the finished candidates,
    // the best beam_size others continue.
    std::map<std::vector<int32_t>, std::pair<double, int>> scores;
    for (int g = 0; g < group; ++g) {
      const std::span<const float> row(&filtered[size_t(g) * size_t(vocab)], size_t(vocab));
      const double norm = log_sum_exp(row);
      std::vector<int32_t> ids(row.size());
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
      const size_t k = std::min(ids.size(), size_t(group + 1));
      std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(),
                        [&](int32_t a, int32_t b) { return row[size_t(a)] > row[size_t(b)]; });
      for (size_t i = 0; i < k; ++i) {
        std::vector<int32_t> seq = tokens[size_t(g)];
        seq.push_back(ids[i]);
        scores[seq] = {sum_logprob[size_t(g)] + double(row[size_t(ids[i])]) - norm, g};
      }
    }
    std::vector<std::pair<std::vector<int32_t>, std::pair<double, int>>> ranked(scores.begin(),
                                                                                scores.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::vector<std::vector<int32_t>> next_tokens;
    std::vector<double> next_sum;
    std::vector<int> sources;
    std::vector<std::pair<std::vector<int32_t>, double>> newly_finished;
    for (auto& [seq, score] : ranked) {
      if (seq.back() == t.eot()) {
        newly_finished.emplace_back(seq, score.first);
      } else {
        next_tokens.push_back(seq);
        next_sum.push_back(score.first);
        sources.push_back(score.second);
        if (int(next_tokens.size()) == group) break;
      }
    }
    if (observe)
      observe(step, std::span(logits_.data(), size_t(vocab)),
              next_tokens.empty() ? t.eot() : next_tokens[0].back());
    for (int g = 0; g < int(next_tokens.size()); ++g)
      model_.copy_sequence(seqs[size_t(sources[size_t(g)])], spare[size_t(g)]);
    seqs.swap(spare);
    tokens = std::move(next_tokens);
    sum_logprob = std::move(next_sum);
    for (auto& [seq, score] : newly_finished) {
      if (finished.size() >= max_candidates) break;
      finished.emplace(seq, score);
    }
    if (finished.size() >= max_candidates || tokens.empty()) break;
  }

  // Candidates: the finished ones, or every row ended here (openai-whisper's
  // finalize), ranked by log-probability over length.
  std::vector<std::pair<std::vector<int32_t>, double>> candidates(finished.begin(), finished.end());
  if (!beam) {
    for (int g = 0; g < group; ++g)
      candidates.emplace_back(tokens[size_t(g)], sum_logprob[size_t(g)]);
  } else if (int(candidates.size()) < group) {
    std::vector<int> order(tokens.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return sum_logprob[size_t(a)] > sum_logprob[size_t(b)]; });
    for (int i : order) {
      if (int(candidates.size()) >= group) break;
      candidates.emplace_back(tokens[size_t(i)], sum_logprob[size_t(i)]);
    }
  }
  size_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::vector<int32_t>& seq = candidates[i].first;
    seq.erase(seq.begin(), seq.begin() + ptrdiff_t(sample_begin));
    if (const auto end = std::find(seq.begin(), seq.end(), t.eot()); end != seq.end())
      seq.erase(end, seq.end());
    const double score = candidates[i].second / double(std::max<size_t>(seq.size(), 1));
    if (score > best_score) best = i, best_score = score;
  }
  result.tokens = candidates[best].first;
  result.text = t.decode(result.tokens);
  const size_t begin = result.text.find_first_not_of(" \t\n\r\f\v");
  result.text =
      begin == std::string::npos
          ? std::string()
          : result.text.substr(begin, result.text.find_last_not_of(" \t\n\r\f\v") + 1 - begin);
  result.avg_logprob = float(candidates[best].second / double(result.tokens.size() + 1));
  result.compression_ratio = compression_ratio(result.text);
  return result;
}

}  // namespace hearth::audio
