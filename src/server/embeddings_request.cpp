#include "server/embeddings_request.h"

#include <limits>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace hearth::server {

namespace {

void check_model(const json& body) {
  if (const json* v = field(body, "model"); v && !v->is_string()) wrong_type("model", "a string", *v);
}

EmbeddingInput text_input(const json& v, const std::string& where) {
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty()) throw bad_request("input", "'" + where + "' must not be an empty string");
  return EmbeddingInput{s, {}, false};
}

EmbeddingInput ids_input(const json& v, const std::string& where) {
  if (v.empty()) throw bad_request("input", "'" + where + "' must not be an empty array of token ids");
  EmbeddingInput in;
  in.is_ids = true;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& id = v[i];
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw bad_request("input", "'" + indexed(where, i) + "' must be a token id (a non-negative integer), got " + quote(id));
    in.ids.push_back(int32_t(id.get<int64_t>()));
  }
  return in;
}

void check_count(const EmbeddingsRequest& r) {
  if (r.inputs.size() > kMaxEmbeddingInputs)
    throw bad_request("input", "'input' holds " + std::to_string(r.inputs.size()) + " inputs; at most " +
                                   std::to_string(kMaxEmbeddingInputs) + " are accepted per request");
}

void parse_dimensions(const json& body, EmbeddingsRequest& r) {
  if (auto d = integer(body, "dimensions", 1, std::numeric_limits<int32_t>::max())) r.dimensions = *d;
}

}  // namespace

EmbeddingsRequest parse_openai_embeddings(const json& body) {
  check_model(body);
  EmbeddingsRequest r;
  const json* input = field(body, "input");
  if (!input) throw bad_request("input", "'input' is required");
  // A string, an array of token ids, or an array of strings or of token-id arrays.
  if (input->is_string()) {
    r.inputs.push_back(text_input(*input, "input"));
  } else if (!input->is_array() || input->empty()) {
    if (input->is_array()) throw bad_request("input", "'input' must not be an empty array");
    wrong_type("input", "a string or an array of strings or token ids", *input);
  } else if ((*input)[0].is_number()) {
    r.inputs.push_back(ids_input(*input, "input"));
  } else {
    for (size_t i = 0; i < input->size(); ++i) {
      const json& v = (*input)[i];
      if (v.is_string()) r.inputs.push_back(text_input(v, indexed("input", i)));
      else if (v.is_array()) r.inputs.push_back(ids_input(v, indexed("input", i)));
      else wrong_type(indexed("input", i), "a string or an array of token ids", v);
    }
  }
  check_count(r);
  if (auto f = string(body, "encoding_format")) {
    if (*f != "float" && *f != "base64")
      throw bad_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\", got " + quote(json(*f)));
    r.base64 = *f == "base64";
  }
  parse_dimensions(body, r);
  if (const json* u = field(body, "user"); u && !u->is_string()) wrong_type("user", "a string", *u);
  return r;
}

EmbeddingsRequest parse_ollama_embed(const json& body) {
  check_model(body);
  EmbeddingsRequest r;
  r.truncate = boolean(body, "truncate").value_or(true);
  const json* input = field(body, "input");
  if (!input) throw bad_request("input", "'input' is required");
  if (input->is_string()) {
    r.inputs.push_back(text_input(*input, "input"));
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) {
      if (!(*input)[i].is_string()) wrong_type(indexed("input", i), "a string", (*input)[i]);
      r.inputs.push_back(text_input((*input)[i], indexed("input", i)));
    }
  } else {
    if (input->is_array()) throw bad_request("input", "'input' must not be an empty array");
    wrong_type("input", "a string or an array of strings", *input);
  }
  check_count(r);
  parse_dimensions(body, r);
  if (const json* o = field(body, "options"); o && !o->is_object()) wrong_type("options", "an object", *o);
  return r;
}

}  // namespace hearth::server
