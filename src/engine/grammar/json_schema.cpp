#include "engine/grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>
#include <string>
#include <vector>

#include "engine/grammar/json_ranges.h"
#include "engine/grammar/json_rules.h"
#include "engine/grammar/regex.h"

namespace hearth::grammar {

namespace {

using json = nlohmann::ordered_json;

bool is_annotation(std::string_view key) {
  static constexpr std::string_view kAnnotations[] = {
      "title", "description", "default", "examples", "$schema", "$id", "$comment",
      "deprecated", "readOnly", "writeOnly", "format", "$defs", "definitions"};
  return std::find(std::begin(kAnnotations), std::end(kAnnotations), key) != std::end(kAnnotations);
}

bool is_supported(std::string_view key) {
  static constexpr std::string_view kKeywords[] = {
      "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
      "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength", "uniqueItems", "pattern",
      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "propertyNames"};
  return is_annotation(key) || std::find(std::begin(kKeywords), std::end(kKeywords), key) != std::end(kKeywords);
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& b, const json& root) : b_(b), root_(root) {}

  Expr compile(const json& s, const std::string& path) {
    // A chain of $refs nests the compile without nesting the JSON, which
    // the body's depth limit would have refused.
    if (depth_ >= kMaxDepth) fail(path, "the schema nests deeper than " + std::to_string(kMaxDepth) + " levels, counting $ref");
    ++depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    if (s.is_boolean()) {
      if (s.get<bool>()) return json_rules::any_value(b_);
      fail(path, "the schema false matches nothing");
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    for (const auto& [key, value] : s.items())
      if (!is_supported(key)) fail(path + "/" + pointer_token(key), "unsupported keyword \"" + key + "\"");
    if (s.contains("uniqueItems") && s["uniqueItems"] != false)
      fail(path + "/uniqueItems", "unsupported keyword \"uniqueItems\": true");

    alone_with_annotations(s, path);
    if (auto it = s.find("$ref"); it != s.end()) return reference(*it, path + "/$ref");
    if (auto it = s.find("const"); it != s.end()) {
      if (!of_type(declared_types(s, path), *it, path)) fail(path + "/const", "const is not of the schema's type");
      return b_.literal(it->dump());
    }
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) fail(path + "/enum", "enum must be a non-empty array");
      const std::vector<std::string> types = declared_types(s, path);
      std::vector<std::string> options;  // the values of the schema's type, if it names one
      for (const auto& v : *it)
        if (of_type(types, v, path)) options.push_back(v.dump());
      if (options.empty()) fail(path + "/enum", "no value of enum is of the schema's type");
      return b_.literals(std::move(options));
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty()) fail(path + "/" + key, std::string(key) + " must be a non-empty array");
        std::vector<Expr> options;
        for (size_t i = 0; i < it->size(); ++i)
          options.push_back(compile((*it)[i], path + "/" + key + "/" + std::to_string(i)));
        return b_.choice(options);
      }
    if (auto it = s.find("allOf"); it != s.end()) {
      if (!it->is_array() || it->size() != 1) fail(path + "/allOf", "allOf is supported with one schema only");
      return compile((*it)[0], path + "/allOf/0");
    }

    auto type = s.find("type");
    if (type == s.end()) {
      // No type: the type the other keywords are about (a subset of what
      // the schema allows, where it would allow other types too), else any.
      for (const char* key : {"properties", "additionalProperties", "required", "propertyNames"})
        if (s.contains(key)) return typed(s, "object", path);
      for (const char* key : {"items", "minItems", "maxItems"})
        if (s.contains(key)) return typed(s, "array", path);
      for (const char* key : {"minLength", "maxLength", "pattern"})
        if (s.contains(key)) return typed(s, "string", path);
      if (json_ranges::has_bounds(s)) return typed(s, "number", path);
      return json_rules::any_value(b_);
    }
    const std::vector<std::string> types = declared_types(s, path);
    if (types.size() == 1) return typed(s, types[0], path);
    std::vector<Expr> options;
    for (const std::string& t : types) options.push_back(typed(s, t, path));
    return b_.choice(options);
  }

 private:
  // $ref, const, enum, anyOf, oneOf and allOf decide the value alone: a
  // sibling that would narrow it further is refused rather than dropped
  // (const and enum may name their type).
  static void alone_with_annotations(const json& s, const std::string& path) {
    static constexpr const char* kDeciders[] = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"};
    for (const char* decider : kDeciders) {
      if (!s.contains(decider)) continue;
      const bool typed_literal = std::string_view(decider) == "const" || std::string_view(decider) == "enum";
      for (const auto& [key, value] : s.items())
        if (key != decider && !is_annotation(key) && !(typed_literal && key == "type"))
          fail(path + "/" + pointer_token(key), "\"" + key + "\" together with \"" + decider + "\" is not supported");
      return;
    }
  }

  // The types the schema names (none where it has no "type"); a list names
  // each once (JSON Schema requires that; a repeat would compile the schema
  // again, at every level it nests).
  static std::vector<std::string> declared_types(const json& s, const std::string& path) {
    auto it = s.find("type");
    if (it == s.end()) return {};
    const json& type = *it;
    if (type.is_string()) return {type.get<std::string>()};
    if (!type.is_array() || type.empty()) fail(path + "/type", "type must be a string or a non-empty array");
    std::vector<std::string> types;
    for (const auto& t : type) {
      if (!t.is_string()) fail(path + "/type", "type must be a string or a non-empty array");
      if (std::find(types.begin(), types.end(), t.get<std::string>()) != types.end())
        fail(path + "/type", "type lists " + t.dump() + " twice");
      types.push_back(t.get<std::string>());
    }
    return types;
  }

  // Whether a const or enum value is of one of the types the schema names
  // beside it (any, where it names none).
  static bool of_type(const std::vector<std::string>& types, const json& value, const std::string& path) {
    if (types.empty()) return true;
    return std::any_of(types.begin(), types.end(), [&](const std::string& t) {
      if (t == "integer") return value.is_number_integer() || (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>());
      if (t == "number") return value.is_number();
      if (t == "string") return value.is_string();
      if (t == "boolean") return value.is_boolean();
      if (t == "null") return value.is_null();
      if (t == "array") return value.is_array();
      if (t == "object") return value.is_object();
      fail(path + "/type", "unknown type \"" + t + "\"");
    });
  }

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw GrammarError(what + " at " + (path.empty() ? "/" : path));
  }

  static int32_t count(const json& s, const char* key, int32_t fallback, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 100000)
      fail(path + "/" + key, std::string(key) + " must be an integer in [0, 100000]");
    return int32_t(it->get<int64_t>());
  }

  Expr reference(const json& ref, const std::string& path) {
    if (!ref.is_string() || ref.get<std::string>().rfind("#", 0) != 0)
      fail(path, "only local $ref (\"#/...\") is supported");
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const json* resolved = nullptr;
    try {
      resolved = &root_.at(json::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      fail(path, "$ref \"" + target + "\" does not resolve");
    }
    // Reserved before compiling, so a recursive reference finds it.
    const Expr rule = b_.reserve();
    refs_[target] = rule;
    const Expr body = compile(*resolved, target.substr(1));
    b_.define(rule, {{GrammarBuilder::ref(body)}});
    return rule;
  }

  Expr typed(const json& s, const std::string& type, const std::string& path) {
    if (type == "string") {
      const int32_t min = count(s, "minLength", 0, path), max = count(s, "maxLength", -1, path);
      if (max >= 0 && max < min) fail(path + "/maxLength", "maxLength is below minLength");
      if (auto pattern = s.find("pattern"); pattern != s.end()) {
        if (!pattern->is_string()) fail(path + "/pattern", "pattern must be a string");
        try {
          return regex::json_string(b_, pattern->get<std::string>(), min, max);
        } catch (const regex::RegexError& e) {
          fail(path + "/pattern", std::string("pattern ") + pattern->dump() + ": " + e.what());
        }
      }
      return json_rules::string(b_, min, max);
    }
    if (type == "integer") return json_ranges::has_bounds(s) ? json_ranges::integer(b_, s, path) : json_rules::integer(b_);
    if (type == "number") return json_ranges::has_bounds(s) ? json_ranges::number(b_, s, path) : json_rules::number(b_);
    if (type == "boolean") return json_rules::boolean(b_);
    if (type == "null") return json_rules::null(b_);
    if (type == "array") return array(s, path);
    if (type == "object") return object(s, path);
    fail(path + "/type", "unknown type \"" + type + "\"");
  }

  Expr array(const json& s, const std::string& path) {
    const int32_t min = count(s, "minItems", 0, path), max = count(s, "maxItems", -1, path);
    if (max >= 0 && max < min) fail(path + "/maxItems", "maxItems is below minItems");
    auto items = s.find("items");
    if (items != s.end() && !items->is_object() && !items->is_boolean())
      fail(path + "/items", "items must be one schema (tuple forms are not supported)");
    const Expr item = items == s.end() ? json_rules::any_value(b_) : compile(*items, path + "/items");
    return json_rules::array_of(b_, item, min, max);
  }

  // propertyNames that every JSON key satisfies (what zod writes for
  // z.record(z.string(), ...)): true, or {"type": "string"}, annotations
  // aside. Anything narrower would need the keys' grammar, and is refused.
  static void check_property_names(const json& s, const std::string& path) {
    auto it = s.find("propertyNames");
    if (it == s.end() || *it == true) return;
    if (it->is_object() && std::all_of(it->items().begin(), it->items().end(), [](const auto& kv) {
          return is_annotation(kv.key()) || (kv.key() == "type" && kv.value() == "string");
        }))
      return;
    fail(path + "/propertyNames", "unsupported keyword \"propertyNames\" other than {\"type\": \"string\"}");
  }

  Expr object(const json& s, const std::string& path) {
    check_property_names(s, path);
    auto props = s.find("properties");
    auto additional = s.find("additionalProperties");
    if (props == s.end()) {
      if (s.contains("required") && !s["required"].empty())
        fail(path + "/required", "required without properties is not supported");
      if (additional == s.end() || *additional == true) return json_rules::any_object(b_);
      if (*additional == false) return b_.literal("{}");
      return json_rules::map_of(b_, compile(*additional, path + "/additionalProperties"));
    }
    if (!props->is_object()) fail(path + "/properties", "properties must be an object");
    if (additional != s.end() && *additional != false)
      fail(path + "/additionalProperties", "additionalProperties other than false together with properties");
    // Sets: an object's keys are looked up one by one, and a body may name
    // a property in `required` a million times.
    std::unordered_set<std::string> names, required;
    for (const auto& [name, schema] : props->items()) names.insert(name);
    if (auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) fail(path + "/required", "required must be an array of property names");
      for (const auto& r : *it) {
        if (!r.is_string() || !names.count(r.get<std::string>()))
          fail(path + "/required", "required names " + r.dump() + ", which is not in properties");
        required.insert(r.get<std::string>());
      }
    }
    struct Member {
      Expr expr;
      bool required;
    };
    std::vector<Member> members;
    for (const auto& [name, schema] : props->items()) {
      const Expr value = compile(schema, path + "/properties/" + pointer_token(name));
      const Expr member = b_.sequence({b_.literal(json(name).dump()), json_rules::colon(b_), value});
      members.push_back({member, required.count(name) > 0});
    }
    return members_in_order(members);
  }

  // "{" members "}" in schema order, the optional ones skippable. Two
  // chains of rules, built from the end: first[i] = members i.. with none
  // written yet (no comma before the next), rest[i] = members i.. after
  // one was written (a comma before each).
  template <class Member>
  Expr members_in_order(const std::vector<Member>& members) {
    const Expr empty = b_.reserve();
    b_.define(empty, {{}});
    Expr first = empty, rest = empty;
    for (size_t i = members.size(); i-- > 0;) {
      const Member& m = members[i];
      const Expr with_comma = b_.sequence({json_rules::comma(b_), m.expr, rest});
      const Expr next_first = b_.sequence({m.expr, rest});
      first = m.required ? next_first : b_.choice({next_first, first});
      rest = m.required ? with_comma : b_.choice({with_comma, rest});
    }
    return b_.sequence({b_.literal("{"), first, b_.literal("}")});
  }

  static constexpr int kMaxDepth = 128;
  GrammarBuilder& b_;
  const json& root_;
  std::map<std::string, Expr> refs_;
  int depth_ = 0;
};

}  // namespace

Expr json_schema(GrammarBuilder& b, const json& schema) { return SchemaCompiler(b, schema).compile(schema, ""); }

Expr tool_call_object(GrammarBuilder& b, std::string_view name, const json& parameters,
                      std::string_view arguments_key) {
  const bool any = parameters.is_null() || (parameters.is_object() && parameters.empty());
  const Expr args = any ? json_rules::any_object(b) : json_schema(b, parameters);
  return b.sequence({b.literal("{\"name\""), json_rules::colon(b), b.literal(json(std::string(name)).dump()),
                     json_rules::comma(b), b.literal(json(std::string(arguments_key)).dump()),
                     json_rules::colon(b), args, b.literal("}")});
}

std::shared_ptr<const Grammar> compile_json_schema(const json& schema) {
  GrammarBuilder b;
  const Expr root = json_schema(b, schema);
  return b.build(root);
}

std::shared_ptr<const Grammar> compile_json_object() {
  GrammarBuilder b;
  return b.build(json_rules::any_object(b));
}

}  // namespace hearth::grammar
