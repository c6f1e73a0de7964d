"""The fixtures `@modelcontextprotocol/conformance`'s server suite calls: tools, resources and prompts with
the names and outputs its scenarios expect. Test configuration only — registered always, offered only
while LENSRELAY_MCP_CONFORMANCE_FIXTURES is on (see `transport.catalog`, `prompts`, and the provider's
own check below)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import struct
import zlib
from typing import Any

from mcp_tools.prompts import Prompt, PromptArgument, register_prompt
from mcp_tools.registry import ToolContext
from mcp_tools.resources.providers import Resources, register_resource_provider
from mcp_tools.transport.catalog import RichTool, fixtures_enabled, register_rich_tool
from mcp_tools.transport.context import CallScope
from mcp_tools.transport.outbound import ClientRequestError

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
STEP_DELAY_SECONDS = 0.05


def _png_pixel(red: int, green: int, blue: int) -> bytes:
    """A valid 1x1 RGB PNG, built rather than pasted."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(bytes([0, red, green, blue]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence(samples: int = 800, rate: int = 8000) -> bytes:
    """A valid mono 8-bit PCM WAV of silence (0.1 s)."""
    data = bytes([128]) * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    body = (
        b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


PNG_B64 = base64.b64encode(_png_pixel(255, 0, 0)).decode()
WAV_B64 = base64.b64encode(_wav_silence()).decode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def done(*content: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(content), "isError": False}


def failed(message: str) -> dict[str, Any]:
    return {"content": [text(message)], "isError": True}


def fixture_tool(name: str, description: str, schema: dict[str, Any] | None = None) -> Any:
    def register(handler: Any) -> Any:
        register_rich_tool(
            RichTool(
                name=name,
                description=description,
                input_schema=schema or NO_ARGUMENTS,
                handler=handler,
                fixture=True,
            )
        )
        return handler

    return register


def string_argument(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
        "additionalProperties": False,
    }


# ------------------------------------------------------------------------------------------- tools


@fixture_tool("test_simple_text", "Returns one text block.")
async def simple_text(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    return done(text("This is a simple text response for testing."))


@fixture_tool("test_image_content", "Returns a 1x1 red PNG image.")
async def image_content(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    return done({"type": "image", "data": PNG_B64, "mimeType": "image/png"})


@fixture_tool("test_audio_content", "Returns a tenth of a second of silence as WAV audio.")
async def audio_content(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    return done({"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"})


@fixture_tool("test_embedded_resource", "Returns an embedded text resource.")
async def embedded_resource(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    resource = {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    return done({"type": "resource", "resource": resource})


@fixture_tool("test_multiple_content_types", "Returns text, an image and an embedded resource together.")
async def multiple_content_types(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    resource = {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    return done(
        text("Multiple content types test:"),
        {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
        {"type": "resource", "resource": resource},
    )


@fixture_tool("test_tool_with_logging", "Sends three info log messages while it runs.")
async def tool_with_logging(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    for step, message in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if step:
            await asyncio.sleep(STEP_DELAY_SECONDS)
        scope.log("info", message, logger="conformance")
    return done(text("Tool with logging executed successfully."))


@fixture_tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 while it runs.")
async def tool_with_progress(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(STEP_DELAY_SECONDS)
        scope.progress(progress, 100, f"{progress}% done")
    return done(text("Tool with progress executed successfully."))


@fixture_tool("test_error_handling", "Always fails, to show how a tool error looks.")
async def error_handling(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    return failed("This tool intentionally returns an error for testing")


@fixture_tool(
    "test_sampling",
    "Asks the client's model to answer a prompt (sampling/createMessage).",
    string_argument("prompt", "The prompt to send to the model"),
)
async def sampling(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str):
        return failed("Invalid arguments for test_sampling: 'prompt' must be a string.")
    if not scope.client_supports("sampling"):
        return failed("The client did not declare the sampling capability.")
    try:
        result = await scope.ask_client(
            "sampling/createMessage",
            {"messages": [{"role": "user", "content": text(prompt)}], "maxTokens": 100},
        )
    except ClientRequestError as exc:
        return failed(str(exc))
    content = result.get("content")
    answer = content.get("text", "") if isinstance(content, dict) else json.dumps(content)
    return done(text(f"LLM response: {answer}"))


async def _elicit(scope: CallScope, message: str, schema: dict[str, Any]) -> dict[str, Any]:
    if not scope.client_supports("elicitation"):
        return failed("The client did not declare the elicitation capability.")
    try:
        result = await scope.ask_client("elicitation/create", {"message": message, "requestedSchema": schema})
    except ClientRequestError as exc:
        return failed(str(exc))
    action = result.get("action", "")
    content = json.dumps(result.get("content") or {})
    return done(text(f"Elicitation completed: action={action}, content={content}"))


@fixture_tool(
    "test_elicitation",
    "Asks the user for a username and an email (elicitation/create).",
    string_argument("message", "The message to show the user"),
)
async def elicitation(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    message = arguments.get("message")
    if not isinstance(message, str):
        return failed("Invalid arguments for test_elicitation: 'message' must be a string.")
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await _elicit(scope, message, schema)


@fixture_tool("test_elicitation_sep1034_defaults", "Elicits a form whose fields all have default values.")
async def elicitation_defaults(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Your age", "default": 30},
            "score": {"type": "number", "description": "Your score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "Your status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified?", "default": True},
        },
    }
    return await _elicit(scope, "Please review these details.", schema)


@fixture_tool("test_elicitation_sep1330_enums", "Elicits every kind of single and multiple choice field.")
async def elicitation_enums(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    def titled(prefix: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
        return [{"const": f"{prefix}{n}", "title": title} for n, title in enumerate(titles, start=1)]

    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": titled("value", ("First Option", "Second Option", "Third Option")),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "items": {"anyOf": titled("value", ("First Choice", "Second Choice", "Third Choice"))},
            },
        },
    }
    return await _elicit(scope, "Pick some options.", schema)


@fixture_tool(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
)
async def json_schema_tool(scope: CallScope, arguments: dict[str, Any]) -> dict[str, Any]:
    return done(text(f"Received: {json.dumps(arguments, sort_keys=True)}"))


# ------------------------------------------------------------------------------------------- resources

STATIC_RESOURCES: dict[str, dict[str, Any]] = {
    "test://static-text": {
        "meta": {"name": "static-text", "description": "A fixed text resource", "mimeType": "text/plain"},
        "content": {"mimeType": "text/plain", "text": "This is the content of the static text resource."},
    },
    "test://static-binary": {
        "meta": {"name": "static-binary", "description": "A fixed PNG image", "mimeType": "image/png"},
        "content": {"mimeType": "image/png", "blob": PNG_B64},
    },
    "test://watched-resource": {
        "meta": {
            "name": "watched-resource",
            "description": "A resource to subscribe to",
            "mimeType": "text/plain",
        },
        "content": {"mimeType": "text/plain", "text": "Watched resource content."},
    },
}
TEMPLATE = re.compile(r"test://template/(?P<id>[^/]+)/data")


@register_resource_provider
class FixtureResources:
    async def list(self, ctx: ToolContext, cursor: str | None) -> tuple[Resources, str | None]:
        if not fixtures_enabled():
            return [], None
        return [{"uri": uri, **entry["meta"]} for uri, entry in STATIC_RESOURCES.items()], None

    async def read(self, ctx: ToolContext, uri: str) -> Resources | None:
        if not fixtures_enabled():
            return None
        if uri in STATIC_RESOURCES:
            return [{"uri": uri, **STATIC_RESOURCES[uri]["content"]}]
        match = TEMPLATE.fullmatch(uri)
        if match is None:
            return None
        item = match.group("id")
        data = {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
        return [{"uri": uri, "mimeType": "application/json", "text": json.dumps(data)}]

    def templates(self) -> Resources:
        if not fixtures_enabled():
            return []
        return [
            {
                "uriTemplate": "test://template/{id}/data",
                "name": "template-data",
                "description": "Data for any id",
                "mimeType": "application/json",
            }
        ]


# ------------------------------------------------------------------------------------------- prompts


def _user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


async def _simple(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    return [_user(text("This is a simple prompt for testing."))]


async def _with_arguments(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    return [_user(text(f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"))]


async def _complete_arguments(ctx: ToolContext, argument: str, prefix: str) -> list[str]:
    choices = {"arg1": ["paris", "park", "party", "test", "testing"], "arg2": ["world", "word", "work"]}
    return [choice for choice in choices.get(argument, []) if choice.startswith(prefix)]


async def _with_embedded_resource(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    resource = {
        "uri": arguments["resourceUri"],
        "mimeType": "text/plain",
        "text": "Embedded resource content for testing.",
    }
    return [
        _user({"type": "resource", "resource": resource}),
        _user(text("Please process the embedded resource above.")),
    ]


async def _with_image(ctx: ToolContext, arguments: dict[str, str]) -> list[dict[str, Any]]:
    return [
        _user({"type": "image", "data": PNG_B64, "mimeType": "image/png"}),
        _user(text("Please analyze the image above.")),
    ]


register_prompt(
    Prompt(name="test_simple_prompt", description="A prompt without arguments", render=_simple, fixture=True)
)
register_prompt(
    Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments",
        render=_with_arguments,
        arguments=(
            PromptArgument("arg1", "First test argument", required=True),
            PromptArgument("arg2", "Second test argument", required=True),
        ),
        complete=_complete_arguments,
        fixture=True,
    )
)
register_prompt(
    Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        render=_with_embedded_resource,
        arguments=(PromptArgument("resourceUri", "URI of the resource to embed", required=True),),
        fixture=True,
    )
)
register_prompt(
    Prompt(
        name="test_prompt_with_image", description="A prompt with an image", render=_with_image, fixture=True
    )
)
