#!/usr/bin/python3
"""Template comparison test: renders every chat template in tests/text/templates
with a battery of conversations (template_cases.py) in Python jinja2,
configured exactly like Hugging Face transformers (hf_jinja_reference.py), and
in hearth (`hearth template --batch`), and compares the bytes. Templates that
raise for a conversation must raise in both; raise_exception messages must
match. @huggingface/jinja (npm) renders the same cases as a second opinion
where it is installed; its disagreements with Python are reported, not failed.

    /usr/bin/python3 tests/text/test_templates.py --hearth build/hearth

Prints `templates: N passed, M failed` last; exits non-zero on failure.
--write-golden FILE also stores the Python results for the C++ golden test.
Needs Debian's python3-jinja2 (use /usr/bin/python3, not a pyenv python).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import hf_jinja_reference as ref  # noqa: E402
import template_cases  # noqa: E402


def load_templates(directory):
    with open(os.path.join(directory, "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    out = []
    for fname in sorted(os.listdir(directory)):
        if not fname.endswith(".jinja"):
            continue
        name = fname[: -len(".jinja")]
        with open(os.path.join(directory, fname), encoding="utf-8", newline="") as f:
            source = f.read()
        t = tokens.get(name, {})
        out.append((name, source, t.get("bos_token"), t.get("eos_token")))
    return out


def python_result(case):
    status, text = ref.render(case["template"], ref.chat_variables(case))
    return {"status": status, "text": text}


def run_hearth(hearth, cases):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps({k: c[k] for k in ("template", "bos_token", "eos_token", "messages", "tools", "add_generation_prompt", "kwargs")}, ensure_ascii=False) + "\n")
        path = f.name
    try:
        r = subprocess.run([hearth, "template", "--batch", path], capture_output=True, text=True, encoding="utf-8")
    finally:
        os.unlink(path)
    if r.returncode != 0:
        sys.exit(f"hearth template --batch failed ({r.returncode}): {r.stderr}")
    results = [json.loads(line) for line in r.stdout.split("\n") if line]  # not splitlines(): U+2028
    if len(results) != len(cases):
        sys.exit(f"hearth returned {len(results)} results for {len(cases)} cases")
    return results


def run_node(cases):
    """@huggingface/jinja results, or None when it is not installed."""
    script = os.path.join(HERE, "render_hf_jinja.mjs")
    if not shutil.which("node") or not os.path.isdir(os.path.join(ROOT, "node_modules", "@huggingface", "jinja")):
        return None
    payload = [{"template": c["template"], "vars": ref.chat_variables(c)} for c in cases]
    r = subprocess.run(["node", script], input=json.dumps(payload), capture_output=True, text=True, cwd=ROOT, encoding="utf-8")
    if r.returncode != 0:
        print(f"note: @huggingface/jinja run failed: {r.stderr.strip()[:300]}")
        return None
    return json.loads(r.stdout)


def agrees(py, other_status, other_text, other_message=None):
    if py["status"] == "ok":
        return other_status == "ok" and other_text == py["text"]
    if py["status"] == "raised":
        return other_status == "raised" and other_message == py["text"]
    return other_status == "error"


def node_agrees(py, n):
    """@huggingface/jinja throws plain Errors for raise_exception and for its
    own failures alike, so a raise agrees when the message is Python's."""
    if py["status"] == "ok":
        return n["status"] == "ok" and n["text"] == py["text"]
    if py["status"] == "raised":
        return n["status"] == "error" and n["text"] == py["text"]
    return n["status"] == "error"


def hearth_status(h):
    if "output" in h:
        return "ok", h["output"], None
    if h.get("kind") == "raised":
        return "raised", None, h.get("message")
    return "error", None, h.get("error")


def first_diff(a, b):
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return i


def time_dependent(case):
    """Whether the output depends on today's date (strftime_now)."""
    saved = ref._ENV.globals["strftime_now"]
    outs = []
    try:
        for day in ("2001-02-03", "2011-12-13"):
            from datetime import datetime

            ref._ENV.globals["strftime_now"] = lambda fmt, d=day: datetime.fromisoformat(d).strftime(fmt)
            outs.append(ref.render(case["template"], ref.chat_variables(case)))
    finally:
        ref._ENV.globals["strftime_now"] = saved
    return outs[0] != outs[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hearth", required=True, help="path to the hearth binary")
    ap.add_argument("--templates", default=os.path.join(HERE, "templates"))
    ap.add_argument("--write-golden", metavar="FILE", help="also write the Python results as JSONL")
    ap.add_argument("--no-node", action="store_true", help="skip the @huggingface/jinja second opinion")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    templates = load_templates(args.templates)
    cases = template_cases.expand(templates)
    py = [python_result(c) for c in cases]
    hearth = run_hearth(args.hearth, cases)

    passed = failed = 0
    for c, p, h in zip(cases, py, hearth):
        status, text, message = hearth_status(h)
        if agrees(p, status, text, message):
            passed += 1
            if args.verbose:
                print(f"ok   {c['id']} ({p['status']})")
            continue
        failed += 1
        print(f"FAIL {c['id']}")
        print(f"     python: {p['status']}: {p['text'][:200]!r}" if p["status"] != "ok" else "     python: ok")
        if status == "ok" and p["status"] == "ok":
            i = first_diff(p["text"], text)
            print(f"     first difference at byte {i}:")
            print(f"       python: {p['text'][max(0, i - 60):i + 60]!r}")
            print(f"       hearth: {text[max(0, i - 60):i + 60]!r}")
        else:
            print(f"     hearth: {status}: {(text or message or '')[:200]!r}")

    by_status = {}
    for p in py:
        by_status[p["status"]] = by_status.get(p["status"], 0) + 1
    print(f"{len(templates)} templates x {len(cases) // max(1, len(templates))} cases; python: "
          + ", ".join(f"{v} {k}" for k, v in sorted(by_status.items())))

    if not args.no_node:
        node = run_node(cases)
        if node is None:
            print("@huggingface/jinja: not installed, second opinion skipped")
        else:
            same = sum(1 for p, n in zip(py, node) if node_agrees(p, n))
            print(f"@huggingface/jinja agrees with Python on {same} of {len(cases)} cases")
            if args.verbose:
                for c, p, n in zip(cases, py, node):
                    if not node_agrees(p, n):
                        print(f"  differs: {c['id']} (python {p['status']}, js {n['status']})")

    if args.write_golden:
        with open(args.write_golden, "w", encoding="utf-8") as f:
            for c, p in zip(cases, py):
                row = {
                    "id": c["id"],
                    "template": c["template_name"],
                    "bos_token": c["bos_token"],
                    "eos_token": c["eos_token"],
                    "messages": c["messages"],
                    "tools": c["tools"],
                    "add_generation_prompt": c["add_generation_prompt"],
                    "kwargs": c["kwargs"],
                    "status": p["status"],
                    "text": p["text"] if p["status"] != "error" else "",
                    "time_dependent": p["status"] == "ok" and time_dependent(c),
                }
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {args.write_golden}")

    print(f"templates: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
