// What the filters' two source files share: the filters on strings and numbers
// (filters_strings.cpp), named by the table of all filters in filters.cpp
// (with those over sequences and mappings), and an argument helper both use.
// Private to the filters; builtins.h's find_filter is the interface.
#pragma once

#include <cstddef>

#include "text/jinja/builtins.h"
#include "text/jinja/value.h"

namespace hearth::text::jinja::detail {

// A boolean argument by position or keyword; dflt when it is absent.
inline bool truthy_arg(const CallArgs& a, size_t pos, const char* name, bool dflt) {
  auto v = a.get(pos, name);
  return v ? v->truthy() : dflt;
}

// filters_strings.cpp
Value f_abs(Interpreter&, const Value&, CallArgs&);
Value f_capitalize(Interpreter&, const Value&, CallArgs&);
Value f_upper(Interpreter&, const Value&, CallArgs&);
Value f_lower(Interpreter&, const Value&, CallArgs&);
Value f_title(Interpreter&, const Value&, CallArgs&);
Value f_center(Interpreter&, const Value&, CallArgs&);
Value f_default(Interpreter&, const Value&, CallArgs&);
Value f_escape(Interpreter&, const Value&, CallArgs&);
Value f_forceescape(Interpreter&, const Value&, CallArgs&);
Value f_safe(Interpreter&, const Value&, CallArgs&);
Value f_int(Interpreter&, const Value&, CallArgs&);
Value f_float(Interpreter&, const Value&, CallArgs&);
Value f_format(Interpreter&, const Value&, CallArgs&);
Value f_indent(Interpreter&, const Value&, CallArgs&);
Value f_pprint(Interpreter&, const Value&, CallArgs&);
Value f_replace(Interpreter&, const Value&, CallArgs&);
Value f_round(Interpreter&, const Value&, CallArgs&);
Value f_string(Interpreter&, const Value&, CallArgs&);
Value f_tojson(Interpreter&, const Value&, CallArgs&);
Value f_trim(Interpreter&, const Value&, CallArgs&);
Value f_truncate(Interpreter&, const Value&, CallArgs&);
Value f_wordcount(Interpreter&, const Value&, CallArgs&);

}  // namespace hearth::text::jinja::detail
