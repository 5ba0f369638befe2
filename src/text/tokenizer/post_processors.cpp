// Post-processors of tokenizer.json (special tokens around the encoded text).
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "text/tokenizer/component_util.h"
#include "text/unicode.h"

namespace hearth::text::detail {

namespace u = hearth::text::unicode;

namespace {

using Lookup = std::function<std::optional<int32_t>(std::string_view)>;

int32_t resolve(const Lookup& lookup, const std::string& token, const char* where) {
  auto id = lookup(token);
  if (!id) bad(std::string(where) + ": token \"" + token + "\" is not in the vocabulary");
  return *id;
}

class TemplatePost final : public PostProcessor {
 public:
  TemplatePost(const json& j, const Lookup& lookup) {
    for (const auto& item : j.at("single")) {
      if (item.contains("SpecialToken")) {
        const std::string name = item["SpecialToken"].at("id").get<std::string>();
        std::vector<int32_t> ids;
        const json& st = j.value("special_tokens", json::object());
        if (st.contains(name) && st[name].contains("ids")) {
          for (const auto& v : st[name]["ids"]) {
            if (!v.is_number_integer() || !std::in_range<int32_t>(v.get<int64_t>()))
              bad("TemplateProcessing: the ids of \"" + name + "\" must be token ids, not " + v.dump());
            ids.push_back(v.get<int32_t>());
          }
        } else {
          ids.push_back(resolve(lookup, name, "TemplateProcessing"));
        }
        Step s;
        s.ids = std::move(ids);
        steps_.push_back(std::move(s));
      } else if (item.contains("Sequence")) {
        Step s;
        s.sequence = true;
        steps_.push_back(std::move(s));
      }
    }
  }
  void process(std::vector<int32_t>& ids, bool add) const override {
    if (!add) return;
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const auto& s : steps_) {
      if (s.sequence)
        out.insert(out.end(), ids.begin(), ids.end());
      else
        out.insert(out.end(), s.ids.begin(), s.ids.end());
    }
    ids = std::move(out);
  }
  std::vector<int32_t> added_ids() const override {
    std::vector<int32_t> out;
    for (const auto& s : steps_) out.insert(out.end(), s.ids.begin(), s.ids.end());
    return out;
  }

 private:
  struct Step {
    bool sequence = false;
    std::vector<int32_t> ids;
  };
  std::vector<Step> steps_;
};

class ClsSepPost final : public PostProcessor {
 public:
  ClsSepPost(const json& j, const Lookup& lookup) {
    auto get = [&](const char* key) {
      const json& v = j.at(key);
      if (v.is_array() && v.size() == 2 && v[1].is_number_integer()) {
        if (!std::in_range<int32_t>(v[1].get<int64_t>())) bad(std::string(key) + ": bad token id " + v[1].dump());
        return v[1].get<int32_t>();
      }
      return resolve(lookup, v.is_array() ? v[0].get<std::string>() : v.get<std::string>(), key);
    };
    cls_ = get("cls");
    sep_ = get("sep");
  }
  void process(std::vector<int32_t>& ids, bool add) const override {
    if (!add) return;
    ids.insert(ids.begin(), cls_);
    ids.push_back(sep_);
  }
  std::vector<int32_t> added_ids() const override { return {cls_, sep_}; }

 private:
  int32_t cls_, sep_;
};

class NoOpPost final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
  std::vector<int32_t> added_ids() const override { return {}; }
};

class SequencePost final : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool add) const override {
    for (const auto& p : items_)
      if (p) p->process(ids, add);
  }
  std::vector<int32_t> added_ids() const override {
    std::vector<int32_t> out;
    for (const auto& p : items_)
      if (p) {
        const auto ids = p->added_ids();
        out.insert(out.end(), ids.begin(), ids.end());
      }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const Lookup& lookup) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j);
  if (t == "TemplateProcessing") return std::make_unique<TemplatePost>(j, lookup);
  if (t == "BertProcessing" || t == "RobertaProcessing") return std::make_unique<ClsSepPost>(j, lookup);
  if (t == "ByteLevel") return std::make_unique<NoOpPost>();
  if (t == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> items;
    for (const auto& p : j.at("processors")) items.push_back(make_post_processor(p, lookup));
    return std::make_unique<SequencePost>(std::move(items));
  }
  bad("unknown post_processor type \"" + t + "\"");
}

}  // namespace hearth::text::detail
