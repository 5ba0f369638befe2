// What a request carries to constrain its output: a compiled grammar and
// the vocabulary of the model's tokenizer, both immutable and shared. The
// engine makes each request's Matcher from it.
#pragma once

#include <memory>

#include "engine/grammar/grammar.h"
#include "engine/grammar/vocabulary.h"

namespace hearth::grammar {

struct Constraint {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const Vocabulary> vocabulary;
};

}  // namespace hearth::grammar
