// JSON Schema → grammar. The supported subset, and the choices made:
//
// - type: string, number, integer, boolean, null, array, object, or a list
//   of them; enum; const; anyOf and oneOf (both as "any of": the grammar
//   cannot check that exactly one matches); allOf of a single schema;
//   $ref to any JSON pointer in the root ("#/$defs/x", "#/definitions/x"),
//   recursive ones included; true (any value). These decide the value on
//   their own: another validation keyword beside them is refused (const and
//   enum may name their type: enum values of another type are left out, a
//   const of another type is refused). A type list names each type once. Without a type, the schema is taken as the
//   type its keywords are about (properties: object, items: array,
//   maxLength, pattern: string; minimum...: number), else any value.
// - object: properties are emitted in schema order; `required` ones always,
//   the others optionally. additionalProperties defaults to false (closed
//   objects, as OpenAI's strict mode requires); true or a schema is
//   supported only on objects without `properties` (a map).
//   propertyNames only as true or {"type": "string"} (every key is one;
//   zod writes it for z.record(z.string(), ...)).
//   No properties at all: any JSON object.
// - array: items (one schema), minItems, maxItems.
// - string: minLength, maxLength (in characters; an escape is one);
//   pattern (regex.h: an ECMAScript subset, unanchored as JSON Schema
//   says; beside minLength / maxLength only in simple cases).
// - integer, number: minimum, maximum, exclusiveMinimum, exclusiveMaximum
//   (numbers, or draft 4's booleans), multipleOf 1 (json_ranges.h: exact
//   digit grammars; bounded numbers are plain decimals).
// - Annotations are ignored: title, description, default, examples,
//   $schema, $id, $comment, deprecated, readOnly, writeOnly, and `format`
//   (not enforced: any string passes).
// - Everything else is refused with GrammarError naming the keyword and
//   its JSON pointer: multipleOf other than 1, regex features beyond the
//   subset, prefixItems, uniqueItems: true, patternProperties, not,
//   if/then/else, ...
//
// Whitespace and number bounds: json_rules.h.
#pragma once

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace hearth::grammar {

// Adds the schema's value to the builder; throws GrammarError.
Expr json_schema(GrammarBuilder& b, const nlohmann::ordered_json& schema);

// The JSON object {"name": "<name>", "<arguments_key>": <parameters>} as
// tool calls write it (Hermes/Qwen use "arguments", some formats
// "parameters"). An empty parameters schema (null or {}) means any object.
Expr tool_call_object(GrammarBuilder& b, std::string_view name, const nlohmann::ordered_json& parameters,
                      std::string_view arguments_key = "arguments");

// Whole grammars: a value of the schema; any JSON object (OpenAI's
// response_format {"type": "json_object"}).
std::shared_ptr<const Grammar> compile_json_schema(const nlohmann::ordered_json& schema);
std::shared_ptr<const Grammar> compile_json_object();

}  // namespace hearth::grammar
