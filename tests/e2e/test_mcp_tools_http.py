"""The knowledge-base tools over plain HTTP JSON-RPC against a running server (seed 002's curl checks).

One daphne server for the module, with the demo vault imported as folder "Lens" and a small second vault
as folder "Private" (a unique word, and a document that makes a catastrophic regex backtrack). Every call
goes the way curl would send it in the handshake era: initialize, then the `Mcp-Session-Id` and
`MCP-Protocol-Version` headers on everything after.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.timing import process_cpu_seconds, wall_bound

from .relay import Relay, TokenSpec

pytestmark = pytest.mark.e2e

DEMO = Path(__file__).resolve().parents[2] / "lensrelay" / "demo_vault"
DEMO_PATHS = sorted(f"Lens/{p.relative_to(DEMO).as_posix()}" for p in DEMO.rglob("*.md"))
SECRET_WORD = "quokkaphant"
SECRET_PATH = "Private/Secret.md"
TRAP_PATH = "Private/Trap.md"
VERSION = "2025-11-25"
ACCEPT_BOTH = "application/json, text/event-stream"
TIMEOUT = 30.0
# The server stops a search after 2 s of its CPU time: the CPU the call costs it is bounded, and the wall
# time too, generously and stretched by the machine's load (tests/timing.py).
CATASTROPHE_CPU_BOUND = 5.0
CATASTROPHE_BOUND = 15.0
WRITE_TOOLS = {
    "edit",
    "multi_edit",
    "write",
    "move",
    "delete",
    "comment",
    "reply",
    "resolve_thread",
    "review_decide",
}
READ_TOOLS = {
    "read",
    "glob",
    "grep",
    "get_links",
    "search",
    "read_metadata",
    "property_search",
    "info",
    "list_suggestions",
    "get_url",
    "validate_content",
    "list_threads",
    "review_suggestions",
}
# What the first line of Welcome.md holds: any of it in an answer to a trick path is a leak.
WELCOME_MARKER = "Welcome to Lens Relay"


@dataclass(frozen=True)
class Vaults:
    relay: Relay
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return f"{self.relay.http_url}/mcp"


@pytest.fixture(scope="module")
def vaults(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Vaults:
    private = tmp_path_factory.mktemp("private-vault")
    (private / "Secret.md").write_text(f"# Secret\n\nThe {SECRET_WORD} lives here.\n")
    (private / "Trap.md").write_text("a" * 40 + "!\n")
    created = relay.setup(
        imports=[(DEMO, "Lens"), (private, "Private")],
        tokens={
            "lens-only": TokenSpec("view", ("Lens",)),
            "private-only": TokenSpec("view", ("Private",)),
        },
    )
    return Vaults(relay=relay, tokens={**relay.tokens, **created})


# ------------------------------------------------------------------------------------- a curl-like client


def messages_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE response body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        found = []
        for block in response.text.replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
            if data:
                found.append(json.loads("\n".join(data)))
        return found
    body = response.json()
    return body if isinstance(body, list) else [body]


class Session:
    """One MCP session over plain HTTP POSTs."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self.session_id: str | None = None
        self.version = VERSION
        self._next_id = 0

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = self.version
        return {**headers, **(extra or {})}

    async def post(
        self, body: Any = None, *, content: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        # Plain http: verify=False skips loading CA certificates, a good part of each call's cost.
        async with httpx.AsyncClient(timeout=TIMEOUT, verify=False) as client:
            raw = content if content is not None else json.dumps(body).encode()
            return await client.post(self.url, content=raw, headers=self.headers(headers))

    async def open(self, version: str = VERSION) -> dict[str, Any]:
        response = await self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "http-e2e", "version": "1.0"},
                },
            }
        )
        assert response.status_code == 200, response.text
        self.session_id = response.headers["Mcp-Session-Id"]
        [message] = messages_of(response)
        self.version = message["result"]["protocolVersion"]
        initialized = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status_code == 202, initialized.text
        return dict(message["result"])

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON-RPC response message (result or error) for one request."""
        self._next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            body["params"] = params
        response = await self.post(body)
        assert response.status_code == 200, f"{method}: {response.status_code} {response.text}"
        replies = [m for m in messages_of(response) if m.get("id") == self._next_id]
        assert len(replies) == 1, response.text
        return replies[0]

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await self.rpc(method, params)
        assert "error" not in reply, reply
        return dict(reply["result"])

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """A tool's text and isError; a JSON-RPC error here fails the test (tools fail in-band)."""
        result = await self.result("tools/call", {"name": name, "arguments": arguments})
        text = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
        return text, bool(result.get("isError", False))


async def session(vaults: Vaults, token_name: str = "edit") -> Session:
    opened = Session(vaults.url, vaults.tokens[token_name])
    await opened.open()
    return opened


# ------------------------------------------------------------------------------------------ seed 002


async def test_the_seed_handshake_as_curl_sends_it(vaults: Vaults) -> None:
    # The seed's curl sends only Content-Type: no Accept header, protocol 2025-03-26.
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        base = {"Content-Type": "application/json", "Authorization": f"Bearer {vaults.tokens['edit']}"}
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "clientInfo": {"name": "test", "version": "1.0"}},
        }
        response = await client.post(vaults.url, json=init, headers=base)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")  # jq can read it
        assert "result" in response.json(), response.text
        assert response.json()["result"]["protocolVersion"] == "2025-03-26"
        session_id = response.headers["Mcp-Session-Id"]
        headers = {**base, "Mcp-Session-Id": session_id}
        notified = await client.post(
            vaults.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )
        assert notified.status_code == 202
        listed = await client.post(
            vaults.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
        assert {"read", "glob", "get_links"} <= {tool["name"] for tool in listed.json()["result"]["tools"]}


async def test_tools_list_names_and_schemas(vaults: Vaults) -> None:
    mcp = await session(vaults)
    tools = {tool["name"]: tool for tool in (await mcp.result("tools/list"))["tools"]}
    assert set(tools) >= READ_TOOLS | WRITE_TOOLS
    for name, tool in tools.items():
        assert tool["description"].strip(), name
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert isinstance(tool["annotations"]["readOnlyHint"], bool), name
        assert tool["annotations"]["readOnlyHint"] is (name not in WRITE_TOOLS), name

    read = tools["read"]["inputSchema"]
    assert set(read["properties"]) == {"file_path", "offset", "limit"}
    assert read["required"] == ["file_path"] and read["properties"]["file_path"]["type"] == "string"
    glob = tools["glob"]["inputSchema"]
    assert set(glob["properties"]) == {"pattern", "path"} and glob["required"] == ["pattern"]
    links = tools["get_links"]["inputSchema"]
    assert set(links["properties"]) == {"file_path"} and links["required"] == ["file_path"]


async def test_glob_all_markdown_returns_every_demo_path(vaults: Vaults) -> None:
    lens_only = await session(vaults, "lens-only")
    text, error = await lens_only.call("glob", {"pattern": "**/*.md"})
    assert not error and sorted(text.splitlines()) == DEMO_PATHS and len(DEMO_PATHS) == 14

    everything = await session(vaults)
    text, _ = await everything.call("glob", {"pattern": "**/*.md"})
    assert sorted(text.splitlines()) == sorted([*DEMO_PATHS, SECRET_PATH, TRAP_PATH])


async def test_read_is_cat_n(vaults: Vaults) -> None:
    mcp = await session(vaults)
    text, error = await mcp.call("read", {"file_path": "Lens/Welcome.md"})
    assert not error
    assert re.match(r"^ +[0-9]+\t", text)  # the seed's jq test
    lines = text.splitlines()
    source = (DEMO / "Welcome.md").read_text().splitlines()
    assert len(lines) == len(source)
    for number, (shown, original) in enumerate(zip(lines, source, strict=True), start=1):
        assert shown == f"{number:>6}\t{original}"

    window, _ = await mcp.call("read", {"file_path": "Lens/Welcome", "offset": 8, "limit": 1})
    assert window.splitlines()[0] == f"     8\t{source[7]}"


async def test_a_missing_document_and_an_unknown_tool_fail_in_band(vaults: Vaults) -> None:
    mcp = await session(vaults)
    reply = await mcp.rpc("tools/call", {"name": "read", "arguments": {"file_path": "Lens/NonExistent.md"}})
    assert "error" not in reply and reply["result"]["isError"] is True
    assert re.search("not found", reply["result"]["content"][0]["text"], re.IGNORECASE)

    reply = await mcp.rpc("tools/call", {"name": "unknown_tool", "arguments": {}})
    assert "error" not in reply and reply["result"]["isError"] is True
    assert "unknown_tool" in reply["result"]["content"][0]["text"]


async def test_get_links_has_both_sections(vaults: Vaults) -> None:
    mcp = await session(vaults)
    text, error = await mcp.call("get_links", {"file_path": "Lens/Photosynthesis.md"})
    assert not error
    backlinks, _, forward = text.partition("Forward links")
    assert backlinks.startswith("Backlinks") and forward
    assert "- Lens/Welcome.md" in backlinks
    assert "- Lens/Chloroplast.md" in forward


# ------------------------------------------------------------------------------------------ bad input


async def test_invalid_json_is_a_parse_error(vaults: Vaults) -> None:
    mcp = await session(vaults)
    for broken in (b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe not utf-8", b"[1, 2"):
        response = await mcp.post(content=broken)
        [message] = messages_of(response)
        assert message["error"]["code"] == -32700, broken
        assert message["id"] is None


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("read", {"file_path": 42}, "file_path"),
        ("read", {"file_path": "Lens/Welcome.md", "offset": "ten"}, "offset"),
        ("glob", {"pattern": ["*.md"]}, "pattern"),
        ("grep", {"pattern": "cell", "-A": "three"}, "-A"),
        ("grep", {"pattern": "cell", "output_mode": "everything"}, "output_mode"),
        ("search", {"query": "cell", "limit": 0}, "limit"),
        ("property_search", {"properties": "status=draft"}, "properties"),
        ("glob", {}, "pattern"),
        ("read", {"file_path": "Lens/Welcome.md", "bogus": True}, "bogus"),
    ],
)
async def test_wrong_argument_types_name_the_argument(
    vaults: Vaults, tool: str, arguments: dict[str, Any], named: str
) -> None:
    mcp = await session(vaults)
    text, error = await mcp.call(tool, arguments)
    assert error, text
    assert f"'{named}'" in text, text
    assert tool in text


async def test_a_catastrophic_regex_returns_within_the_bound(vaults: Vaults) -> None:
    mcp = await session(vaults)
    pid = vaults.relay.server.pid
    assert pid is not None
    cpu, started = process_cpu_seconds(pid), time.monotonic()
    text, error = await mcp.call("grep", {"pattern": "(a|aa)+$", "path": TRAP_PATH})
    cpu, elapsed = process_cpu_seconds(pid) - cpu, time.monotonic() - started
    assert error and "longer than" in text, text
    assert cpu < CATASTROPHE_CPU_BOUND
    assert elapsed < wall_bound(CATASTROPHE_BOUND)
    # The worker is free again at once.
    text, error = await mcp.call("grep", {"pattern": "a+!", "path": TRAP_PATH})
    assert not error and text == TRAP_PATH


async def test_an_oversized_body_is_413(vaults: Vaults) -> None:
    mcp = await session(vaults)
    padding = "x" * (4 * 1024 * 1024 + 1)  # over the default 4 MiB limit
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"padding": padding}}}
    response = await mcp.post(body)
    assert response.status_code == 413
    assert "Too Large" in response.text


async def test_a_foreign_origin_is_403_and_our_own_is_fine(vaults: Vaults) -> None:
    mcp = await session(vaults)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for origin in ("http://evil.example.com", "null", "https://127.0.0.1.evil.example"):
        response = await mcp.post(ping, headers={"Origin": origin})
        assert response.status_code == 403, origin
    own = await mcp.post(ping, headers={"Origin": vaults.relay.http_url})
    assert own.status_code == 200 and messages_of(own)[0]["result"] == {}


TRICK_PATHS = [
    "../Lens/Welcome.md",
    "/etc/passwd",
    "Lens/../../x",
    "Lens/../Lens/Welcome.md",
    "%2e%2e/Lens/Welcome.md",
    "Lens/%2e%2e/Lens/Welcome.md",
    "Lens/Welcome.md\x00",
    "Lens/Welcome.md\x00.txt",
    "Lens\\Welcome.md",
    "./Lens/Welcome.md",
    "Lens/./Welcome.md",
    "//Lens/Welcome.md",
    "file:///etc/passwd",
    "~/.ssh/id_rsa",
    "Private/../Lens/Welcome.md",
]


@pytest.mark.parametrize("tool", ["read", "get_links", "read_metadata"])
async def test_traversal_tricks_in_file_path_find_nothing(vaults: Vaults, tool: str) -> None:
    edit = await session(vaults)
    private_only = await session(vaults, "private-only")
    cases = [(edit, path) for path in TRICK_PATHS] + [
        (private_only, path) for path in [*TRICK_PATHS, "/Lens/Welcome.md", "Lens/Welcome.md"]
    ]
    for mcp, path in cases:
        text, error = await mcp.call(tool, {"file_path": path})
        # (a NUL is refused at the door, before any lookup: no path holds one)
        refusal = "not found" if "\x00" not in path else "contains a nul character"
        assert error and refusal in text.lower(), (mcp.token, path, text)
        assert WELCOME_MARKER not in text


async def test_glob_and_grep_tricks_stay_inside_the_callers_folders(vaults: Vaults) -> None:
    mcp = await session(vaults, "private-only")
    for arguments in (
        {"pattern": "../Lens/*.md"},
        {"pattern": "**/*.md", "path": "Private/.."},
        {"pattern": "**/*.md", "path": "../Lens"},
        {"pattern": "/Lens/**"},
    ):
        text, _ = await mcp.call("glob", arguments)
        assert "Lens/" not in text, (arguments, text)
    for arguments in (
        {"pattern": "Welcome", "path": "Private/../Lens"},
        {"pattern": "Welcome", "path": "../Lens"},
        {"pattern": "Welcome", "glob": "../Lens/*.md"},
        {"pattern": "Welcome", "output_mode": "content"},
    ):
        text, _ = await mcp.call("grep", arguments)
        assert "Lens/" not in text and WELCOME_MARKER not in text, (arguments, text)


# ------------------------------------------------------------------------------------------ auth and scope


def assert_unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_no_token_or_a_wrong_token_is_401_with_a_bearer_challenge(vaults: Vaults) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for token in (None, "lr_not-a-real-token"):
        assert_unauthorized(await Session(vaults.url, token).post(ping))
    for header in ("Basic ZWRpdDplZGl0", "Bearer", f"Token {vaults.tokens['edit']}"):
        assert_unauthorized(await Session(vaults.url, None).post(ping, headers={"Authorization": header}))
    opened = await session(vaults)
    opened.token = "lr_not-a-real-token"  # a valid session does not stand in for the token
    assert_unauthorized(await opened.post(ping))


async def test_revoked_and_expired_tokens_are_401_even_mid_session(vaults: Vaults) -> None:
    revoked = await session(vaults, "to-revoke")
    expired = await session(vaults, "to-expire")
    for mcp in (revoked, expired):
        text, error = await mcp.call("read", {"file_path": "Lens/Welcome.md"})
        assert not error and WELCOME_MARKER in text
    await vaults.relay.adisable_tokens(
        revoke=[vaults.tokens["to-revoke"]], expire=[vaults.tokens["to-expire"]]
    )
    for mcp in (revoked, expired):
        response = await mcp.post(
            {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "info", "arguments": {}}}
        )
        assert_unauthorized(response)
        fresh = Session(vaults.url, mcp.token)
        assert_unauthorized(await fresh.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}))


async def test_a_token_for_one_folder_cannot_reach_another(vaults: Vaults) -> None:
    lens_only = await session(vaults, "lens-only")
    private_only = await session(vaults, "private-only")

    # The owner of the folder finds the word with every tool ...
    text, error = await private_only.call("read", {"file_path": SECRET_PATH})
    assert not error and SECRET_WORD in text
    text, _ = await private_only.call("glob", {"pattern": "**/*.md"})
    assert sorted(text.splitlines()) == [SECRET_PATH, TRAP_PATH]
    text, _ = await private_only.call("grep", {"pattern": SECRET_WORD})
    assert text.splitlines() == [SECRET_PATH]
    text, _ = await private_only.call("search", {"query": SECRET_WORD})
    assert SECRET_PATH in text

    # ... and the other token cannot read, glob, grep or search it.
    text, error = await lens_only.call("read", {"file_path": SECRET_PATH})
    assert error and SECRET_WORD not in text
    text, _ = await lens_only.call("glob", {"pattern": "**/*"})
    assert "Private" not in text and sorted(text.splitlines()) == DEMO_PATHS
    text, _ = await lens_only.call("glob", {"pattern": "Private/**"})
    assert text == "No files found"
    text, _ = await lens_only.call("grep", {"pattern": SECRET_WORD})
    assert text == "No matches found."
    text, _ = await lens_only.call("grep", {"pattern": SECRET_WORD, "output_mode": "content", "glob": "**"})
    assert SECRET_WORD not in text
    text, _ = await lens_only.call("search", {"query": SECRET_WORD})
    assert SECRET_PATH not in text and text.startswith("No results")
    for tool, arguments in (
        ("get_links", {"file_path": SECRET_PATH}),
        ("read_metadata", {"file_path": SECRET_PATH}),
        ("property_search", {"properties": {"status": "x"}, "path": "Private"}),
    ):
        text, error = await lens_only.call(tool, arguments)
        assert error and SECRET_WORD not in text, (tool, text)
    text, _ = await lens_only.call("info", {})
    assert "Private" not in text and "Lens/ (14 documents)" in text


async def test_another_folder_answers_exactly_like_a_missing_one(vaults: Vaults) -> None:
    lens_only = await session(vaults, "lens-only")
    for tool, arguments in (
        ("read", {"file_path": "{folder}/Secret.md"}),
        ("get_links", {"file_path": "{folder}/Secret.md"}),
        ("read_metadata", {"file_path": "{folder}/Secret.md"}),
        ("grep", {"pattern": "the", "path": "{folder}"}),
        ("glob", {"pattern": "*.md", "path": "{folder}"}),
        ("search", {"query": "the", "path": "{folder}"}),
    ):
        answers = []
        for folder in ("Private", "Nowhere"):
            filled = {key: value.format(folder=folder) for key, value in arguments.items()}
            text, error = await lens_only.call(tool, filled)
            answers.append((text.replace(folder, "F"), error))
        assert answers[0] == answers[1], (tool, answers)


async def test_a_view_token_gets_no_write_tools_and_cannot_edit(vaults: Vaults) -> None:
    view = await session(vaults, "view")
    names = {tool["name"] for tool in (await view.result("tools/list"))["tools"]}
    assert names >= READ_TOOLS and not names & WRITE_TOOLS

    text, error = await view.call("read", {"file_path": "Lens/Glossary.md"})
    assert not error
    text, error = await view.call(
        "edit", {"file_path": "Lens/Glossary.md", "old_string": "Glossary", "new_string": "Word list"}
    )
    assert error and "edit" in text and "view" in text, text
    for tool in ("write", "delete"):
        text, error = await view.call(tool, {"file_path": "Lens/Glossary.md", "content": "gone"})
        assert error, (tool, text)
    unchanged, _ = await view.call("read", {"file_path": "Lens/Glossary.md"})
    assert "Word list" not in unchanged

    suggest = await session(vaults, "suggest")
    names = {tool["name"] for tool in (await suggest.result("tools/list"))["tools"]}
    assert names >= WRITE_TOOLS


# ------------------------------------------------------------------------------ resources, ping, logging


async def every_resource(mcp: Session) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        result = await mcp.result("resources/list", {"cursor": cursor} if cursor else {})
        found += result["resources"]
        cursor = result.get("nextCursor")
        if cursor is None:
            return found


def demo_uri(path: str) -> str:
    from urllib.parse import quote

    return "lens://" + "/".join(quote(segment, safe="") for segment in path.split("/"))


async def test_documents_are_resources(vaults: Vaults) -> None:
    mcp = await session(vaults)
    listed = await every_resource(mcp)
    documents = {item["uri"]: item for item in listed if item["uri"].startswith("lens://")}
    expected = {demo_uri(path) for path in [*DEMO_PATHS, SECRET_PATH, TRAP_PATH]}
    assert expected <= set(documents)
    assert "lens://Lens/%C3%9Cber%20Photosynthese.md" in documents
    for uri, item in documents.items():
        assert item["mimeType"] == "text/markdown" and item["name"] and item["title"], uri

    uri = "lens://Lens/%C3%9Cber%20Photosynthese.md"
    [content] = (await mcp.result("resources/read", {"uri": uri}))["contents"]
    assert content["uri"] == uri and content["mimeType"] == "text/markdown"
    numbered, _ = await mcp.call("read", {"file_path": "Lens/Über Photosynthese.md"})
    assert content["text"].splitlines() == [line.split("\t", 1)[1] for line in numbered.splitlines()]
    assert documents[uri]["size"] == len(content["text"].encode())

    templates = (await mcp.result("resources/templates/list"))["resourceTemplates"]
    assert "lens://{path}" in {template["uriTemplate"] for template in templates}


async def test_resources_respect_the_tokens_folders(vaults: Vaults) -> None:
    lens_only = await session(vaults, "lens-only")
    uris = {item["uri"] for item in await every_resource(lens_only)}
    assert uris == {demo_uri(path) for path in DEMO_PATHS}
    for uri in ("lens://Private/Secret.md", "lens://Nowhere/Secret.md", "lens://Lens/../Private/Secret.md"):
        reply = await lens_only.rpc("resources/read", {"uri": uri})
        assert reply["error"]["code"] == -32002, (uri, reply)
        assert SECRET_WORD not in json.dumps(reply)


async def test_ping_and_logging_set_level_answer(vaults: Vaults) -> None:
    mcp = await session(vaults)
    assert await mcp.result("ping") == {}
    for level in ("debug", "warning", "emergency"):
        assert await mcp.result("logging/setLevel", {"level": level}) == {}
    reply = await mcp.rpc("logging/setLevel", {"level": "chatty"})
    assert reply["error"]["code"] == -32602
