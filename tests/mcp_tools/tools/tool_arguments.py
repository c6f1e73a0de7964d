"""Hypothesis strategies for MCP tool arguments, built from each tool's inputSchema as `tools/list` serves it.

On-schema arguments come from a small strategy builder for the JSON Schema subset pydantic emits (types,
enum, anyOf, local $ref, bounds, required, additionalProperties; hypothesis-jsonschema does not work with
current Hypothesis); off-schema ones break the schema the ways a careless or
hostile client would: wrong types, huge strings, unpaired surrogates, unknown keys, out-of-range numbers, and
regular expressions built to backtrack for ever. Path-like arguments are steered towards real documents
often enough that the tools get past "not found".
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

PATH_KEYS = ("file_path", "path", "new_path")
SURROGATES = ("\udc80", "\ud800", "Lens/\udcff.md", "a\udfffb")
HOSTILE_PATTERNS = (
    "(a+)+$",
    "(x+x+)+y",
    "(?:a|aa)+b",
    "((a*)*)*c",
    "(\\w+\\s?)+$",
    "([",
    "(?<=a+)b",
    "\\p{L}{0,65535}\\P{L}{0,65535}$",
    "(.*a){30}",
)
WRONG_TYPES: tuple[Any, ...] = (None, True, 0, -1, 1.5, 10**30, "", [], {}, ["x"], {"a": 1})
HUGE = ("x" * 60_000, "Lens/" + "é" * 30_000 + ".md", "/" * 10_000, "\x00" * 500)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=20))


def from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Values valid against `schema` (the subset above)."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        return from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of(*(from_schema(option, defs) for option in schema["anyOf"]))
    kind = schema.get("type")
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 60), 60))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema.get("items", {}), defs) if schema.get("items") else JSON_SCALARS
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 4), 4))
    if kind == "object":
        return _object(schema, defs)
    return JSON_SCALARS


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    surplus: st.SearchStrategy[dict[str, Any]] = st.just({})
    if extra is not False and not properties:
        values = from_schema(extra, defs) if isinstance(extra, dict) else JSON_SCALARS
        surplus = st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=3)
    return st.fixed_dictionaries(
        {key: from_schema(value, defs) for key, value in properties.items() if key in required},
        optional={key: from_schema(value, defs) for key, value in properties.items() if key not in required},
    ).flatmap(lambda fixed: surplus.map(lambda more: {**more, **fixed}))


def hostile_strings(real_paths: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SURROGATES),
        st.sampled_from(HUGE),
        st.sampled_from(HOSTILE_PATTERNS),
        st.sampled_from(real_paths).map(lambda p: p + "\udc80"),
        st.text(min_size=0, max_size=40),
    )


def _path_values(real_paths: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(real_paths),
        st.sampled_from(real_paths).map(lambda p: p.removesuffix(".md")),
        st.sampled_from(["Lens", "Lens/", "Lens/Notes", "Lens/Notes/", "Lens/New note.md", "Other/x.md"]),
        st.sampled_from(real_paths).map(lambda p: p.replace("/", "//")),
        st.sampled_from(real_paths).map(lambda p: "../" + p),
    )


def _steered(schema: dict[str, Any], real_paths: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """On-schema arguments whose path-like values are often real documents."""
    properties = schema.get("properties", {})

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        arguments: dict[str, Any] = draw(from_schema(schema))
        for key in PATH_KEYS:
            if key in properties and draw(st.booleans()):
                arguments[key] = draw(_path_values(real_paths))
        if "pattern" in properties and draw(st.integers(0, 3)) == 0:
            arguments["pattern"] = draw(st.sampled_from(HOSTILE_PATTERNS))
        return arguments

    return build()


def _off_schema(schema: dict[str, Any], real_paths: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    properties = list(schema.get("properties", {})) or ["file_path"]

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        arguments: dict[str, Any] = draw(st.one_of(from_schema(schema), st.just({})))
        for key in draw(st.lists(st.sampled_from(properties), min_size=1, max_size=3, unique=True)):
            arguments[key] = draw(
                st.one_of(
                    st.sampled_from(WRONG_TYPES),
                    hostile_strings(real_paths),
                    st.lists(hostile_strings(real_paths), max_size=3),
                    st.dictionaries(hostile_strings(real_paths), hostile_strings(real_paths), max_size=2),
                )
            )
        if draw(st.integers(0, 4)) == 0:
            arguments[draw(st.sampled_from(["unknown", "\udc80", "x" * 300]))] = "surplus"
        return arguments

    return build()


def tool_arguments(schema: dict[str, Any], real_paths: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(_steered(schema, real_paths), _off_schema(schema, real_paths))
