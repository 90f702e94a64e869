"""What the service checks ask the served model, as data: each request once, with what its answer
must show. The prompts are the field report's (3 factorial, the weather tool call, counting to 80)
and a small correctness canary whose answers can be checked exactly (a broken quantization or
tensor-parallel layout answers fluently and wrongly, which every other check would pass)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CANARIES",
    "DECODE",
    "REASONING",
    "STREAMED",
    "THINKING_OFF",
    "TOGETHER",
    "TOOL",
    "TOOL_STREAMED",
    "WEATHER_TOOL",
    "Ask",
    "Canary",
]

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city's name"}},
            "required": ["city"],
        },
    },
}


@dataclass(frozen=True)
class Ask:
    name: str
    prompt: str
    thinking: bool = True  # chat_template_kwargs.enable_thinking (Qwen3's template; on by default)
    stream: bool = False
    tools: bool = False
    max_tokens: int = 2048

    def request(self, model: str) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "user", "content": self.prompt}],
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "chat_template_kwargs": {"enable_thinking": self.thinking},
        }
        if self.tools:
            request |= {"tools": [WEATHER_TOOL], "tool_choice": "auto"}
        if self.stream:
            request["stream_options"] = {"include_usage": True}
        return request


REASONING = Ask("reasoning", "What is 3 factorial?")
THINKING_OFF = Ask("thinking-off", "What is 3 factorial?", thinking=False)
TOOL = Ask("tool", "What's the weather in Beijing now? Call the tool.", tools=True)
TOOL_STREAMED = Ask("tool-streamed", "What's the weather in Beijing now? Call the tool.", tools=True, stream=True)
STREAMED = Ask("streamed", "What is 3 factorial?", stream=True)
# the decode-speed request, measured alone (another request would share the decode steps)
DECODE = Ask("decode", "Count from 1 to 80, separated by commas.", thinking=False, stream=True, max_tokens=512)


def _json_object(text: str) -> dict[str, Any] | None:
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Canary:
    ask: Ask
    expected: str
    correct: Callable[[str], bool]


def _canary(name: str, prompt: str, expected: str, correct: Callable[[str], bool], max_tokens: int = 64) -> Canary:
    # one short answer, thinking off: the reply is the answer, nothing to strip
    return Canary(Ask(name, prompt, thinking=False, max_tokens=max_tokens), expected, correct)


CANARIES = (
    _canary(
        "canary-arithmetic",
        "What is 17 * 23? Answer with the number only.",
        "391",
        lambda text: re.search(r"(?<![\d.])391(?![\d.])", text) is not None,
    ),
    _canary(
        "canary-fact",
        "What is the chemical symbol of gold? Answer with the symbol only.",
        "Au",
        lambda text: re.search(r"\bAu\b", text) is not None,
    ),
    _canary(
        "canary-json",
        'Return only a JSON object with the keys "name" and "age" for a person named Ada who is 36.',
        '{"name": "Ada", "age": 36}',
        lambda text: _json_object(text) == {"name": "Ada", "age": 36},
        max_tokens=128,
    ),
)

# sent at once at the start of the service checks (independent of each other: the server batches them)
TOGETHER = (REASONING, THINKING_OFF, TOOL, TOOL_STREAMED, STREAMED, *(c.ask for c in CANARIES))
