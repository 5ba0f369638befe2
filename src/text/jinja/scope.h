// jinja2 decides statically, per frame (the template, a loop body, a macro
// body, a set/filter/with/call block), how each variable starts: a name whose
// first mention in the frame is an unconditional `set` starts *undefined*
// there, hiding any outer or context value until the set runs. So in
//   {% for m in messages %}{{ x }}{% endfor %}{% set x = 1 %}
// the loop prints nothing even when x is passed in. This pass finds those
// names (jinja2's idtracking.py) and records them on the frames, so the
// interpreter can bind them to Undefined when it enters the frame.
#pragma once

#include <string>
#include <vector>

#include "text/jinja/ast.h"

namespace hearth::text::jinja {

// Fills Stmt::frame_locals / else_locals of every nested frame and returns
// the names that start undefined in the template's own frame.
std::vector<std::string> analyze_frames(Body& body);

}  // namespace hearth::text::jinja
