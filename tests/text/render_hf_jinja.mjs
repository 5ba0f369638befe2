// Renders chat-template cases with @huggingface/jinja (the npm port used by
// transformers.js), as a second opinion beside Python jinja2. Reads a JSON
// array of {template, vars} on stdin; writes a JSON array of
// {status: "ok"|"error", text} on stdout.
import { Template } from "@huggingface/jinja";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const cases = JSON.parse(input);
const cache = new Map();
const out = cases.map(({ template, vars }) => {
  try {
    let t = cache.get(template);
    if (!t) {
      t = new Template(template);
      cache.set(template, t);
    }
    return { status: "ok", text: t.render(vars) };
  } catch (e) {
    // raise_exception and engine errors are both plain Errors here; the
    // caller tells them apart by comparing the message with Python's.
    return { status: "error", text: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
