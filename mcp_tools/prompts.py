"""MCP prompts and argument completion: the registry. The knowledge base's prompts are in
`mcp_tools.prompt_library`; the conformance fixtures' are offered only while
LENSRELAY_MCP_CONFORMANCE_FIXTURES is on. Prompts render and complete for the caller (`ToolContext`): only
what its token's folders hold."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from mcp_tools.registry import ToolContext

Renderer = Callable[[ToolContext, dict[str, str]], Awaitable[list[dict[str, Any]]]]
Completer = Callable[[ToolContext, str, str], Awaitable[list[str]]]
# Completes `ref/resource` arguments: (caller, URI template, argument name, typed prefix) -> values.
ResourceCompleter = Callable[[ToolContext, str, str, str], Awaitable[list[str]]]

MAX_COMPLETIONS = 100


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str
    # Turns the (validated) arguments into PromptMessage dicts ({"role", "content"}).
    render: Renderer
    arguments: tuple[PromptArgument, ...] = ()
    title: str | None = None
    # Values for `completion/complete`: (argument name, typed prefix) -> suggestions.
    complete: Completer | None = None
    fixture: bool = False

    def definition(self) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "arguments": [argument.definition() for argument in self.arguments],
        }
        if self.title:
            definition["title"] = self.title
        return definition


class PromptError(ValueError):
    """Unknown prompt or bad arguments: a protocol error (INVALID_PARAMS) for the caller."""


PROMPTS: dict[str, Prompt] = {}


def register_prompt(prompt: Prompt) -> Prompt:
    if prompt.name in PROMPTS:
        raise RuntimeError(f"prompt {prompt.name!r} registered twice")
    PROMPTS[prompt.name] = prompt
    return prompt


def offered_prompts() -> list[Prompt]:
    fixtures = bool(getattr(settings, "LENSRELAY_MCP_CONFORMANCE_FIXTURES", False))
    return [prompt for prompt in PROMPTS.values() if fixtures or not prompt.fixture]


def find_prompt(name: str) -> Prompt | None:
    return next((prompt for prompt in offered_prompts() if prompt.name == name), None)


def list_prompts() -> dict[str, Any]:
    return {"prompts": [prompt.definition() for prompt in offered_prompts()]}


async def get_prompt(ctx: ToolContext, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    prompt = find_prompt(name)
    if prompt is None:
        known = ", ".join(p.name for p in offered_prompts()) or "none"
        raise PromptError(f"Unknown prompt: {name!r}. Available prompts: {known}.")
    given = {key: str(value) for key, value in (arguments or {}).items()}
    declared = {argument.name for argument in prompt.arguments}
    unknown = sorted(set(given) - declared)
    missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
    if unknown or missing:
        problems = [f"unknown argument {name!r}" for name in unknown]
        problems += [f"missing required argument {name!r}" for name in missing]
        raise PromptError(f"Invalid arguments for prompt {prompt.name}: " + "; ".join(problems) + ".")
    result: dict[str, Any] = {"description": prompt.description, "messages": await prompt.render(ctx, given)}
    return result


_resource_completers: list[ResourceCompleter] = []


def register_resource_completer(completer: ResourceCompleter) -> None:
    _resource_completers.append(completer)


async def complete(ctx: ToolContext, ref: dict[str, Any], argument: dict[str, Any]) -> dict[str, Any]:
    """A `completion/complete` result; references we cannot complete get no suggestions."""
    values: list[str] = []
    name, prefix = str(argument.get("name", "")), str(argument.get("value", ""))
    if ref.get("type") == "ref/prompt":
        prompt = find_prompt(str(ref.get("name", "")))
        if prompt is not None and prompt.complete is not None:
            values = await prompt.complete(ctx, name, prefix)
    elif ref.get("type") == "ref/resource":
        for completer in _resource_completers:
            values += await completer(ctx, str(ref.get("uri", "")), name, prefix)
    return {
        "completion": {
            "values": values[:MAX_COMPLETIONS],
            "total": len(values),
            "hasMore": len(values) > MAX_COMPLETIONS,
        }
    }
