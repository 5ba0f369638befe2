"""Python jinja2 configured exactly like Hugging Face transformers'
_compile_jinja_template (transformers/utils/chat_template_utils.py), used as
the reference for hearth's chat-template engine.

Run with Debian's /usr/bin/python3 (python3-jinja2).
"""
import json
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """HF's {% generation %} ... {% endgeneration %} block (renders its body)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_ENV = make_env()
_CACHE = {}


def render(source, variables):
    """Returns ("ok", text), ("raised", message) for raise_exception, or ("error", text)."""
    try:
        template = _CACHE.get(source)
        if template is None:
            template = _CACHE[source] = _ENV.from_string(source)
        return "ok", template.render(**variables)
    except jinja2.exceptions.TemplateError as e:
        if type(e) is jinja2.exceptions.TemplateError:
            return "raised", str(e)
        return "error", f"{type(e).__name__}: {e}"
    except Exception as e:  # TypeError, ValueError, ... raised inside the template
        return "error", f"{type(e).__name__}: {e}"


def chat_variables(case):
    """The variables transformers' apply_chat_template passes to render()."""
    v = {}
    if case.get("bos_token"):
        v["bos_token"] = case["bos_token"]
    if case.get("eos_token"):
        v["eos_token"] = case["eos_token"]
    v.update(
        messages=case.get("messages", []),
        tools=case.get("tools"),
        documents=None,
        add_generation_prompt=case.get("add_generation_prompt", False),
    )
    v.update(case.get("kwargs") or {})
    return v
