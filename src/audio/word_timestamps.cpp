#include "audio/word_timestamps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace hearth::audio {

namespace {

constexpr double kTokensPerSecond = 50;  // encoder positions per second of audio
constexpr char32_t kReplacement = 0xFFFD;

// Python's `a in b` for strings: a substring test, which openai-whisper's
// punctuation checks rely on (so "" and runs like "?!" count too).
bool within(std::string_view part, std::string_view whole) {
  return whole.find(part) != std::string_view::npos;
}

std::string_view strip(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\n\r\f\v") + 1 - b);
}

// Code points of valid UTF-8 (the tokenizer's decode replaces invalid bytes),
// since Python indexes strings by code point.
std::u32string code_points(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = uint8_t(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : c & (0x3F >> (n - 1));
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k)
      cp = cp << 6 | (uint8_t(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += size_t(n);
  }
  return out;
}

// Tokenizer.split_tokens_on_unicode: a word ends where the tokens so far
// decode without a U+FFFD that the full text does not have.
WordTokens split_on_unicode(const text::WhisperTokenizer& tokenizer,
                            std::span<const int32_t> tokens) {
  const std::u32string full = code_points(tokenizer.decode_with_timestamps(tokens));
  WordTokens out;
  std::vector<int32_t> current;
  size_t offset = 0;
  for (int32_t token : tokens) {
    current.push_back(token);
    const std::string decoded = tokenizer.decode_with_timestamps(current);
    const std::u32string cps = code_points(decoded);
    const size_t bad = cps.find(kReplacement);
    if (bad == std::u32string::npos ||
        (offset + bad < full.size() && full[offset + bad] == kReplacement)) {
      out.first.push_back(decoded);
      out.second.push_back(std::move(current));
      current.clear();
      offset += cps.size();
    }
  }
  return out;
}

// Python's round(x, 2): the exact binary value rounded to two decimals,
// which is what printf's %.2f does.
double round2(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return std::strtod(buf, nullptr);
}

// numpy.median.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Softmax of float32 scores as torch computes it on the CPU.
void softmax_f32(float* x, int64_t n) {
  const float m = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - m);
  for (int64_t i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace

std::vector<std::pair<int, int>> dtw(std::span<const double> x, int rows, int cols) {
  if (x.size() != size_t(rows) * size_t(cols)) throw std::invalid_argument("dtw: bad shape");
  const size_t w = size_t(cols) + 1;
  // float32 costs and traces, as dtw_cpu keeps them (its ties depend on it).
  std::vector<float> cost(size_t(rows + 1) * w, std::numeric_limits<float>::infinity());
  std::vector<int8_t> trace(cost.size(), -1);
  cost[0] = 0;
  for (int j = 1; j <= cols; ++j)
    for (int i = 1; i <= rows; ++i) {
      const float c0 = cost[size_t(i - 1) * w + size_t(j - 1)];
      const float c1 = cost[size_t(i - 1) * w + size_t(j)];
      const float c2 = cost[size_t(i) * w + size_t(j - 1)];
      float c;
      int8_t t;
      if (c0 < c1 && c0 < c2)
        c = c0, t = 0;
      else if (c1 < c0 && c1 < c2)
        c = c1, t = 1;
      else
        c = c2, t = 2;
      cost[size_t(i) * w + size_t(j)] = float(x[size_t(i - 1) * size_t(cols) + size_t(j - 1)] + c);
      trace[size_t(i) * w + size_t(j)] = t;
    }
  for (size_t j = 0; j < w; ++j) trace[j] = 2;
  for (int i = 0; i <= rows; ++i) trace[size_t(i) * w] = 1;
  std::vector<std::pair<int, int>> path;
  for (int i = rows, j = cols; i > 0 || j > 0;) {
    path.emplace_back(i - 1, j - 1);
    const int8_t t = trace[size_t(i) * w + size_t(j)];
    if (t == 0)
      --i, --j;
    else if (t == 1)
      --i;
    else
      --j;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<float> median_filter(std::span<const float> row, int width) {
  const int pad = width / 2;
  const int n = int(row.size());
  if (n <= pad) return {row.begin(), row.end()};
  auto padded = std::vector<float>(size_t(n + 2 * pad));
  auto window = std::vector<float>(size_t(width));
  auto out = std::vector<float>(size_t(n));
  for (int i = 0; i < n + 2 * pad; ++i) {
    const int k = i - pad;  // reflected without repeating the edge
    padded[size_t(i)] = row[size_t(k < 0 ? -k : k >= n ? 2 * (n - 1) - k : k)];
  }
  for (int i = 0; i < n; ++i) {
    std::copy_n(padded.begin() + i, width, window.begin());
    std::nth_element(window.begin(), window.begin() + pad, window.end());
    out[size_t(i)] = window[size_t(pad)];
  }
  return out;
}

WordTokens split_to_word_tokens(const text::WhisperTokenizer& tokenizer, std::string_view language,
                                std::span<const int32_t> tokens) {
  for (std::string_view l : {"zh", "ja", "th", "lo", "my", "yue"})
    if (language == l) return split_on_unicode(tokenizer, tokens);
  // Tokenizer.split_tokens_on_spaces: subwords join the previous word unless
  // special, starting with a space, or punctuation (string.punctuation).
  const WordTokens sub = split_on_unicode(tokenizer, tokens);
  WordTokens out;
  for (size_t i = 0; i < sub.first.size(); ++i) {
    const std::string& subword = sub.first[i];
    const bool special = sub.second[i][0] >= tokenizer.eot();
    const bool with_space = subword.starts_with(' ');
    const bool punctuation = within(strip(subword), "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
    if (special || with_space || punctuation || out.first.empty()) {
      out.first.push_back(subword);
      out.second.push_back(sub.second[i]);
    } else {
      out.first.back() += subword;
      out.second.back().insert(out.second.back().end(), sub.second[i].begin(), sub.second[i].end());
    }
  }
  return out;
}

void merge_punctuations(std::vector<WordTiming>& words, std::string_view prepended,
                        std::string_view appended) {
  for (int i = int(words.size()) - 2, j = int(words.size()) - 1; i >= 0; --i) {
    WordTiming& previous = words[size_t(i)];
    WordTiming& following = words[size_t(j)];
    if (previous.word.starts_with(' ') && within(strip(previous.word), prepended)) {
      following.word = previous.word + following.word;
      following.tokens.insert(following.tokens.begin(), previous.tokens.begin(),
                              previous.tokens.end());
      previous.word.clear();
      previous.tokens.clear();
    } else {
      j = i;
    }
  }
  for (size_t i = 0, j = 1; j < words.size(); ++j) {
    WordTiming& previous = words[i];
    WordTiming& following = words[j];
    if (!previous.word.ends_with(' ') && within(following.word, appended)) {
      previous.word += following.word;
      previous.tokens.insert(previous.tokens.end(), following.tokens.begin(),
                             following.tokens.end());
      following.word.clear();
      following.tokens.clear();
    } else {
      i = j;
    }
  }
}

std::vector<std::pair<int, int>> alignment_heads(const WhisperConfig& config) {
  if (!config.alignment_heads.empty()) return config.alignment_heads;
  std::vector<std::pair<int, int>> heads;
  for (int l = config.decoder_layers / 2; l < config.decoder_layers; ++l)
    for (int h = 0; h < config.decoder_heads; ++h) heads.emplace_back(l, h);
  return heads;
}

std::vector<WordTiming> find_alignment(WhisperModel& model, const text::WhisperTokenizer& tokenizer,
                                       ThreadPool& pool, const WhisperModel::CrossKv& cross,
                                       const std::string& language, const std::string& task,
                                       std::span<const int32_t> text_tokens, int64_t num_frames) {
  if (text_tokens.empty()) return {};
  std::vector<int32_t> tokens = tokenizer.sot_sequence(language, task);
  const size_t sot = tokens.size();
  tokens.push_back(tokenizer.no_timestamps());
  tokens.insert(tokens.end(), text_tokens.begin(), text_tokens.end());
  tokens.push_back(tokenizer.eot());

  WhisperModel::CrossScores kept;
  kept.heads = alignment_heads(model.config());
  WhisperModel::Sequence seq = model.new_sequence();
  const WhisperModel::Row row{&seq, tokens, true};
  std::vector<float> logits;
  model.decode(pool, cross, std::span(&row, 1), logits, &kept);

  // Each text token's probability among the text tokens, from the position before it.
  const size_t vocab = size_t(model.config().vocab_size);
  std::vector<double> token_probs(text_tokens.size());
  for (size_t k = 0; k < text_tokens.size(); ++k) {
    std::vector<float> p(logits.begin() + ptrdiff_t((sot + k) * vocab),
                         logits.begin() + ptrdiff_t((sot + k) * vocab + size_t(tokenizer.eot())));
    softmax_f32(p.data(), int64_t(p.size()));
    token_probs[k] = p[size_t(text_tokens[k])];
  }

  // Per head: softmax over the frames with audio, standardized per frame
  // across tokens, median-filtered along time; then the mean over heads.
  const int64_t n = int64_t(tokens.size()), audio_ctx = model.config().audio_ctx;
  const int64_t frames = std::min(num_frames / 2, audio_ctx);
  if (frames <= 0) return {};
  std::vector<float> matrix(size_t(n * frames), 0.0f), w(size_t(n * frames));
  for (const std::vector<float>& scores : kept.scores) {
    for (int64_t t = 0; t < n; ++t) {
      std::copy_n(&scores[size_t(t * audio_ctx)], frames, &w[size_t(t * frames)]);
      softmax_f32(&w[size_t(t * frames)], frames);
    }
    for (int64_t f = 0; f < frames; ++f) {
      double sum = 0, squares = 0;
      for (int64_t t = 0; t < n; ++t) sum += w[size_t(t * frames + f)];
      const double mean = sum / double(n);
      for (int64_t t = 0; t < n; ++t) squares += std::pow(w[size_t(t * frames + f)] - mean, 2);
      const auto m = float(mean), sd = float(std::sqrt(squares / double(n)));
      for (int64_t t = 0; t < n; ++t)
        w[size_t(t * frames + f)] = (w[size_t(t * frames + f)] - m) / sd;
    }
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<float> filtered =
          median_filter(std::span(&w[size_t(t * frames)], size_t(frames)), 7);
      for (int64_t f = 0; f < frames; ++f) matrix[size_t(t * frames + f)] += filtered[size_t(f)];
    }
  }
  // DTW over the rows from <|notimestamps|> to the last text token, negated.
  const int rows = int(text_tokens.size()) + 1;
  std::vector<double> x(size_t(rows * frames));
  for (int r = 0; r < rows; ++r)
    for (int64_t f = 0; f < frames; ++f)
      x[size_t(r * frames + f)] =
          -double(matrix[size_t((int64_t(sot) + r) * frames + f)] / float(kept.scores.size()));
  const std::vector<std::pair<int, int>> path = dtw(x, rows, int(frames));

  std::vector<int32_t> with_eot(text_tokens.begin(), text_tokens.end());
  with_eot.push_back(tokenizer.eot());
  auto [words, word_tokens] = split_to_word_tokens(tokenizer, language, with_eot);
  if (word_tokens.size() <= 1) return {};
  // The time where the path first reaches each token.
  std::vector<double> jump_times;
  for (size_t k = 0; k < path.size(); ++k)
    if (k == 0 || path[k].first != path[k - 1].first)
      jump_times.push_back(path[k].second / kTokensPerSecond);
  std::vector<WordTiming> out;
  size_t begin = 0;
  for (size_t i = 0; i + 1 < word_tokens.size(); ++i) {
    const size_t end = begin + word_tokens[i].size();
    if (end >= jump_times.size()) break;
    const double mean = std::accumulate(token_probs.begin() + ptrdiff_t(begin),
                                        token_probs.begin() + ptrdiff_t(end), 0.0) /
                        double(end - begin);
    out.push_back({words[i], word_tokens[i], jump_times[begin], jump_times[end], mean});
    begin = end;
  }
  return out;
}

void add_word_timestamps(std::span<Segment> segments, WhisperModel& model,
                         const text::WhisperTokenizer& tokenizer, ThreadPool& pool,
                         const WhisperModel::CrossKv& cross, const std::string& language,
                         const std::string& task, int64_t num_frames,
                         double last_speech_timestamp) {
  if (segments.empty()) return;
  std::vector<std::vector<int32_t>> segment_text(segments.size());
  std::vector<int32_t> text_tokens;
  for (size_t s = 0; s < segments.size(); ++s)
    for (int32_t id : segments[s].tokens)
      if (id < tokenizer.eot()) segment_text[s].push_back(id), text_tokens.push_back(id);
  std::vector<WordTiming> alignment =
      find_alignment(model, tokenizer, pool, cross, language, task, text_tokens, num_frames);

  std::vector<double> durations;
  for (const WordTiming& t : alignment)
    if (t.end - t.start != 0) durations.push_back(t.end - t.start);
  const double median_duration = std::min(0.7, durations.empty() ? 0.0 : median(durations));
  const double max_duration = median_duration * 2;
  // Words at sentence boundaries at most twice the median word (timing.py's hack).
  if (!durations.empty()) {
    constexpr std::string_view kSentenceEnd = ".。!！?？";
    for (size_t i = 1; i < alignment.size(); ++i)
      if (alignment[i].end - alignment[i].start > max_duration) {
        if (within(alignment[i].word, kSentenceEnd))
          alignment[i].end = alignment[i].start + max_duration;
        else if (within(alignment[i - 1].word, kSentenceEnd))
          alignment[i].start = alignment[i].end - max_duration;
      }
  }
  merge_punctuations(alignment, kPrependPunctuations, kAppendPunctuations);

  const double time_offset = double(segments[0].seek * 160) / 16000.0;
  size_t word_index = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    Segment& segment = segments[s];
    std::vector<Word> words;
    for (size_t saved = 0; word_index < alignment.size() && saved < segment_text[s].size();
         ++word_index) {
      const WordTiming& t = alignment[word_index];
      if (!t.word.empty())
        words.push_back({t.word, round2(time_offset + t.start), round2(time_offset + t.end),
                         float(t.probability)});
      saved += t.tokens.size();
    }
    if (!words.empty()) {
      // The first words after a pause at most twice the median word.
      if (words[0].end - last_speech_timestamp > median_duration * 4 &&
          (words[0].end - words[0].start > max_duration ||
           (words.size() > 1 && words[1].end - words[0].start > max_duration * 2))) {
        if (words.size() > 1 && words[1].end - words[1].start > max_duration) {
          const double boundary = std::max(words[1].end / 2, words[1].end - max_duration);
          words[0].end = words[1].start = boundary;
        }
        words[0].start = std::max(0.0, words[0].end - max_duration);
      }
      // The segment's own start and end where the first or last word is too long.
      if (segment.start < words[0].end && segment.start - 0.5 > words[0].start)
        words[0].start = std::max(0.0, std::min(words[0].end - median_duration, segment.start));
      else
        segment.start = words[0].start;
      if (segment.end > words.back().start && segment.end + 0.5 < words.back().end)
        words.back().end = std::max(words.back().start + median_duration, segment.end);
      else
        segment.end = words.back().end;
      last_speech_timestamp = segment.end;
    }
    segment.words = std::move(words);
  }
}

}  // namespace hearth::audio
