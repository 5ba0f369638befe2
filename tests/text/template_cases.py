"""The conversations every chat template is rendered with in the template
comparison test (test_templates.py). Each conversation is a dict with
messages, and optionally tools and kwargs; every one is rendered with
add_generation_prompt false and true.
"""
import copy
import json

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city. Handles \"quotes\", <tags> & ünïcödé ✓",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 'Paris'"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                "days": {"type": "integer", "description": "Forecast days", "default": 1, "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "after": {"type": "string", "format": "date"}},
                },
                "limit": {"type": ["integer", "null"], "description": "Max results"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ratio": {"type": "number", "default": 0.5},
            },
            "required": ["query"],
        },
    },
}

CALC_TOOL = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "e.g. 2 + 2"},
                "precise": {"type": "boolean", "description": "Use exact arithmetic"},
                "digits": {"type": "number", "description": "Rounding", "default": 2.5},
            },
            "required": ["expression"],
        },
    },
}

# Flat parameter types: every template can render these. SEARCH_TOOL (nested
# objects, arrays, type lists) is used by one conversation only, because some
# templates fail on such schemas (Hermes recurses forever on a type list).
TOOLS = [WEATHER_TOOL, CALC_TOOL]

SYSTEM = {"role": "system", "content": "You are a helpful assistant.\nAnswer briefly."}
USER1 = {"role": "user", "content": "What's the weather in Paris?"}
USER2 = {"role": "user", "content": "And in Tokyo? Also tell me a joke."}
ASSISTANT1 = {"role": "assistant", "content": "It is sunny in Paris, 22°C."}


def call(name, args, call_id, as_string=False):
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False) if as_string else args},
    }


def tool_result(content, call_id, name):
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name}


def conversations():
    c = []

    def add(name, messages, tools=None, kwargs=None):
        c.append({"name": name, "messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools), "kwargs": kwargs or {}})

    add("user_only", [USER1])
    add("system_user", [SYSTEM, USER1])
    add("multi_turn", [SYSTEM, USER1, ASSISTANT1, USER2])
    add("multi_turn_no_system", [USER1, ASSISTANT1, USER2])
    add("ends_with_assistant", [SYSTEM, USER1, ASSISTANT1])
    add("tools_defined", [SYSTEM, USER1], TOOLS)
    add("tools_no_system", [USER1], TOOLS)
    add(
        "tool_call_object_args",
        [
            SYSTEM,
            USER1,
            {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"}, "call12345")]},
            tool_result('{"temperature": 22, "condition": "sunny"}', "call12345", "get_weather"),
        ],
        TOOLS,
    )
    add(
        "tool_call_string_args",
        [
            USER1,
            {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "abcdefghi", as_string=True)]},
            tool_result("22 degrees and sunny", "abcdefghi", "get_weather"),
            {"role": "assistant", "content": "It's 22 degrees and sunny in Paris."},
            USER2,
        ],
        TOOLS,
    )
    add(
        "parallel_tool_calls",
        [
            SYSTEM,
            USER2,
            {
                "role": "assistant",
                "content": "Let me check both.",
                "tool_calls": [
                    call("get_weather", {"city": "Tokyo", "days": 3}, "call00001"),
                    call("calculate", {"expression": "6 * 7", "precise": True, "digits": None}, "call00002"),
                ],
            },
            tool_result("rainy", "call00001", "get_weather"),
            tool_result("42", "call00002", "calculate"),
        ],
        TOOLS,
    )
    add(
        "tool_call_no_tools_list",
        [
            USER1,
            {"role": "assistant", "tool_calls": [call("get_weather", {"city": "Paris"}, "call99999")]},
            tool_result("sunny", "call99999", "get_weather"),
        ],
    )
    add(
        "reasoning_content",
        [
            SYSTEM,
            USER1,
            {"role": "assistant", "content": "Sunny.", "reasoning_content": "The user wants weather.\nI know it is sunny."},
            USER2,
        ],
    )
    add(
        "reasoning_last_turn",
        [USER1, {"role": "assistant", "content": "Sunny.", "reasoning_content": "Thinking about Paris."}],
    )
    add(
        "think_tags_in_content",
        [USER1, {"role": "assistant", "content": "<think>\nLet me think.\n</think>\n\nIt is sunny."}, USER2],
    )
    add("enable_thinking_false", [SYSTEM, USER1], None, {"enable_thinking": False})
    add("enable_thinking_true", [USER1, ASSISTANT1, USER2], None, {"enable_thinking": True})
    add(
        "content_parts",
        [
            {"role": "system", "content": [{"type": "text", "text": "Be terse."}]},
            {"role": "user", "content": [{"type": "text", "text": "Describe this:"}, {"type": "text", "text": " a cat."}]},
        ],
    )
    add(
        "content_parts_multi_turn",
        [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
            {"role": "user", "content": [{"type": "text", "text": "Bye"}]},
        ],
    )
    add(
        "special_characters",
        [
            {"role": "system", "content": "  Leading and trailing spaces  \n"},
            {"role": "user", "content": "Quotes \" ' backslash \\ tab\t <b>&amp;</b> {{ not a tag }} {% raw %} émoji 😀 中文\r\nCRLF"},
        ],
    )
    add("empty_content", [{"role": "user", "content": ""}])
    add("two_users_in_a_row", [USER1, USER2])
    add("assistant_first", [ASSISTANT1, USER1])
    add("system_only", [SYSTEM])
    add("no_messages", [])
    add("unknown_role", [{"role": "developer", "content": "Use tools wisely."}, USER1])
    add("date_string", [SYSTEM, USER1], TOOLS, {"date_string": "26 Jul 2024"})
    add(
        "documents",
        [USER1],
        None,
        {"documents": [{"title": "Paris", "text": "Paris is in France."}, {"title": "Tokyo", "text": "Tokyo is in Japan."}]},
    )
    add("tools_empty_list", [USER1], [])
    add("tools_complex_schema", [SYSTEM, USER1], [WEATHER_TOOL, SEARCH_TOOL])
    add("functions_kwarg", [SYSTEM, USER1], None, {"functions": json.dumps([WEATHER_TOOL["function"]], indent=2)})
    add(
        "tool_call_then_answer_with_tools",
        [
            SYSTEM,
            USER1,
            {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call54321")]},
            tool_result("sunny, 22C", "call54321", "get_weather"),
            {"role": "assistant", "content": "Sunny and 22°C."},
            USER2,
        ],
        TOOLS,
        {"enable_thinking": False},
    )
    # Multi-turn tool use ending with a new user turn: what a client sends
    # back after running the calls, so the model's own calls are re-rendered.
    add(
        "parallel_tool_calls_then_user",
        [
            SYSTEM,
            USER2,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call("get_weather", {"city": "Tokyo", "unit": "celsius"}, "call00011"),
                    call("calculate", {"expression": "6 * 7"}, "call00012"),
                ],
            },
            tool_result('{"temperature": 18}', "call00011", "get_weather"),
            tool_result("42", "call00012", "calculate"),
            {"role": "assistant", "content": "18°C in Tokyo. Joke: 6 * 7 = 42."},
            USER1,
        ],
        TOOLS,
    )
    add(
        "two_tool_rounds_then_user",
        [
            USER1,
            {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call00021")]},
            tool_result("sunny", "call00021", "get_weather"),
            {
                "role": "assistant",
                "content": "Let me convert that.",
                "tool_calls": [call("calculate", {"expression": "22 * 9 / 5 + 32", "precise": False}, "call00022")],
            },
            tool_result("71.6", "call00022", "calculate"),
            {"role": "assistant", "content": "Sunny, 71.6°F."},
            USER2,
        ],
        TOOLS,
    )
    add(
        "tool_call_nested_args_then_user",
        [
            USER1,
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    call(
                        "get_weather",
                        {"city": "São Paulo", "options": {"days": [1, 2], "note": "quote \" and <tag>"}, "flag": False, "none": None},
                        "call00031",
                    )
                ],
            },
            tool_result("cloudy", "call00031", "get_weather"),
            USER2,
        ],
        TOOLS,
    )
    add(
        "parallel_string_args_then_user",
        [
            USER2,
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    call("get_weather", {"city": "Tokyo"}, "call00041", as_string=True),
                    call("calculate", {"expression": "1 + 1"}, "call00042", as_string=True),
                ],
            },
            tool_result("rainy", "call00041", "get_weather"),
            tool_result("2", "call00042", "calculate"),
            USER1,
        ],
        TOOLS,
    )
    add(
        "tool_call_with_reasoning_then_user",
        [
            USER1,
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "I should call the weather tool.",
                "tool_calls": [call("get_weather", {"city": "Paris"}, "call00051")],
            },
            tool_result("sunny", "call00051", "get_weather"),
            {"role": "assistant", "content": "Sunny.", "reasoning_content": "The tool said sunny."},
            USER2,
        ],
        TOOLS,
    )
    return c


def expand(templates):
    """All (template, conversation, add_generation_prompt) cases.
    templates: list of (name, source, bos_token, eos_token)."""
    cases = []
    for tname, source, bos, eos in templates:
        for conv in conversations():
            for agp in (False, True):
                kwargs = dict(conv["kwargs"])
                cases.append(
                    {
                        "id": f"{tname}/{conv['name']}/{'gen' if agp else 'nogen'}",
                        "template_name": tname,
                        "template": source,
                        "bos_token": bos or "",
                        "eos_token": eos or "",
                        "messages": conv["messages"],
                        "tools": conv["tools"],
                        "add_generation_prompt": agp,
                        "kwargs": kwargs,
                    }
                )
    return cases
