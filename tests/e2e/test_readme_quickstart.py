"""The README's quick start and team set-up, run as written on a fresh clone against a fresh server.

Every block of the "Quick start" section runs verbatim: ``./scripts/serve`` (with ``LENSRELAY_SKIP_INSTALL=1``
so it reuses this virtualenv instead of installing into it) on a free, non-default ``PORT``, with
``LENSRELAY_URL`` set as the README tells a reader on another port to; the shell commands from the clone's
directory; the JavaScript snippet saved where the README says, with Node. One thing differs from a reader's
machine: ``npm install``, whose packages are the ones the e2e tests installed (linked, not downloaded
again). The snippet's refusals (no token, a refused token, a path that names nothing, no server) are run too,
the note is printed once per change, and the checkout is left as it was. The team set-up's commands (a
person invited from the shell, who chooses a password through the printed link; a token for an assistant)
and its MCP SDK snippet run too, and the person reaches every admin page the set-up lists, able to type in
the editor.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pycrdt import Doc, Text

from .liveserver import free_port
from .yclient import NODE_MODULES

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 120.0
OUTPUT_TIMEOUT = 20.0
DEFAULT_ADDRESS = "127.0.0.1:8000"
# The test process's own settings must not leak into the reader's fresh server.
_PRIVATE_ENV = ("LENSRELAY_DATA_DIR", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "TOKEN")


def section(readme: Path, title: str) -> str:
    return readme.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", text, flags=re.S)


def quick_start(readme: Path) -> list[tuple[str, str]]:
    """The (language, code) blocks of the README's "Quick start" section, in order."""
    return code_blocks(section(readme, "Quick start"))


def commands(code: str) -> list[str]:
    return [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]


# One clone and one server for the module: neither test writes inside the checkout, and starting
# ./scripts/serve is most of each test's time.
@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory, node_modules: Path) -> Path:
    target = tmp_path_factory.mktemp("reader") / "lens-relay"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    (target / ".venv").symlink_to(Path(sys.prefix))
    return target


def reader_env(port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _PRIVATE_ENV}
    env.update(PORT=str(port), LENSRELAY_SKIP_INSTALL="1", LENSRELAY_URL=f"http://127.0.0.1:{port}")
    return env


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[tuple[Path, int]]:
    """``./scripts/serve`` from the clone, as the quick start's first block says."""
    [(language, code), *_] = quick_start(clone / "README.md")
    assert (language, commands(code)) == ("bash", ["./scripts/serve"])
    port = free_port()
    assert port != 8000
    log_path = clone.parent / "serve.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        ["bash", "-c", code], cwd=clone, env=reader_env(port), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"./scripts/serve did not come up:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield clone, port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def _read_until(process: subprocess.Popen[str], wanted: str, seen: list[str]) -> None:
    deadline = time.monotonic() + OUTPUT_TIMEOUT
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    while wanted not in "".join(seen):
        line = process.stdout.readline()
        if line:
            seen.append(line)
            continue
        if process.poll() is not None or time.monotonic() > deadline:
            stderr = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"never printed {wanted!r}; stdout: {''.join(seen)!r}; stderr: {stderr}")
        time.sleep(0.1)


def _append_live(base: str, token: str, doc_id: str, addition: str) -> None:
    """Another client's edit: the document's state, one appended line, posted back as an update."""
    headers = {"Authorization": f"Bearer {token}"}
    state = httpx.get(f"{base}/d/{doc_id}/as-update", headers=headers, timeout=10)
    assert state.status_code == 200
    doc: Doc = Doc()
    doc.apply_update(state.content)
    before = doc.get_state()
    text = doc.get("contents", type=Text)
    text += addition
    posted = httpx.post(
        f"{base}/d/{doc_id}/update", headers=headers, content=doc.get_update(before), timeout=10
    )
    assert posted.status_code in (200, 204), posted.text


def _drain(process: subprocess.Popen[str], seen: list[str], *, seconds: float) -> None:
    """Whatever the process prints within `seconds` (its stdout is non-blocking after `_read_until`)."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            seen.append(line)
        else:
            time.sleep(0.05)


def _printed(seen: list[str], line: str) -> int:
    return sum(1 for printed in seen if printed.rstrip("\n") == line)


def test_every_quick_start_command_and_snippet_runs_as_written(served: tuple[Path, int]) -> None:
    clone, port = served
    blocks = quick_start(clone / "README.md")
    assert [language for language, _ in blocks] == ["bash", "bash", "js", "bash"]
    (_, serve), (_, find), (_, snippet), (_, watch) = blocks
    env = reader_env(port)
    here = f"127.0.0.1:{port}"
    assert DEFAULT_ADDRESS in find and DEFAULT_ADDRESS in snippet  # the default, overridden by LENSRELAY_URL

    # the demo token is where the README says
    token = (clone / "data" / "demo-token").read_text().strip()
    assert token.startswith("lr_") and "data/demo-token" in find

    # find a document: the commands of the second block, in one shell, verbatim
    found = subprocess.run(
        ["bash", "-e", "-c", find], cwd=clone, env=env, capture_output=True, text=True, timeout=30
    )
    assert found.returncode == 0, found.stderr
    [document] = json.loads(found.stdout)
    assert document["path"] == "Lens/Welcome.md" and document["ws_url"].startswith(f"ws://{here}/d/")

    # save the snippet where the README says: a folder of its own, outside the checkout
    saved_as = re.search(r"save this as `([^`]+)`", (clone / "README.md").read_text()).group(1)  # type: ignore[union-attr]
    target = (clone / saved_as).resolve()
    assert not target.is_relative_to(clone), saved_as
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(snippet, encoding="utf-8")
    lines = commands(watch)
    [install] = [line for line in lines if line.startswith("npm install")]
    for package in install.split()[2:]:
        assert (NODE_MODULES / package / "package.json").is_file(), package
    (target.parent / "node_modules").symlink_to(NODE_MODULES)
    run = "\n".join(line for line in lines if line != install)
    exports = "\n".join(line for line in commands(find) if line.startswith("export "))

    # its refusals, each in one line, status 1
    refusals = {
        "no token": ({"TOKEN": ""}, "Lens/Welcome", "Set TOKEN first"),
        "a refused token": (
            {"TOKEN": "lr_wrong"},
            "Lens/Welcome",
            "The server refused: The bearer token is unknown.",
        ),
        "no such path": ({}, "Lens/Nowhere", "No document at Lens/Nowhere"),
        "no server": ({"LENSRELAY_URL": f"http://127.0.0.1:{free_port()}"}, "Lens/Welcome", "Cannot reach"),
    }
    for what, (extra, path, message) in refusals.items():
        script = run.replace("Lens/Welcome", path)
        refused = subprocess.run(
            ["bash", "-c", script], cwd=clone, env={**env, "TOKEN": token, **extra},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        said = refused.stderr.strip()
        assert refused.returncode == 1, (what, refused.stdout, said)
        assert said.startswith(message) and len(said.splitlines()) == 1, (what, said)

    watcher = subprocess.Popen(
        ["bash", "-c", f"{exports}\n{run}"], cwd=clone, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        seen: list[str] = []
        welcome = (REPO / "lensrelay" / "demo_vault" / "Welcome.md").read_text(encoding="utf-8")
        last_line = welcome.splitlines()[-1]
        _read_until(watcher, last_line, seen)
        _drain(watcher, seen, seconds=1.0)
        assert _printed(seen, last_line) == 1, seen  # printed once on connect
        # "edit the document from another client and it prints the new text"
        _append_live(f"http://{here}", token, document["doc_id"], "Written by another client.\n")
        _read_until(watcher, "Written by another client.", seen)
        _drain(watcher, seen, seconds=1.0)
        assert _printed(seen, "Written by another client.") == 1, seen
    finally:
        os.killpg(watcher.pid, signal.SIGTERM)
        watcher.wait(timeout=10)
    assert serve.strip() == "./scripts/serve"
    # npm's files and the snippet stayed outside the checkout
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=clone, capture_output=True, text=True
    )
    left = {line[3:].rstrip("/") for line in status.stdout.splitlines()}
    assert left <= {".venv", "data"}, status.stdout


def _run(code: str, clone: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-e", "-c", code], cwd=clone, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (code, done.stdout, done.stderr)
    return done.stdout


def test_the_team_set_up_runs_as_written(served: tuple[Path, int]) -> None:
    clone, port = served
    team = section(clone / "README.md", "Set up a team in ten minutes")
    blocks = code_blocks(team)
    assert [language for language, _ in blocks] == ["bash", "bash", "bash", "python"]
    (_, staff), (_, create_token), (_, claude), (_, sdk) = blocks
    env = reader_env(port)
    base = f"http://127.0.0.1:{port}"

    # a second person, invited from the shell as written, chooses a password through the printed link
    invited = _run(staff, clone, env)
    username = re.search(r"invite (\w+)@", staff).group(1)  # type: ignore[union-attr]
    link = re.search(r"works once\): \S+?(/accounts/password/\S+)", invited).group(1)  # type: ignore[union-attr]
    password = "a passphrase chosen by the person"
    with httpx.Client(base_url=base, timeout=30, follow_redirects=True) as browser:
        form = browser.get(link)
        assert "new_password1" in form.text, form.text[:500]
        chosen = browser.post(
            form.url.path,
            data={"new_password1": password, "new_password2": password,
                  "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
        )  # fmt: skip
        assert "Password reset complete" in chosen.text, chosen.text[:500]

    # a token for an assistant: the raw token alone on the last line
    token = _run(create_token, clone, env).strip().splitlines()[-1]
    assert token.startswith("lr_")
    assert '--header "Authorization: Bearer $TOKEN"' in claude and "/mcp" in claude

    # the MCP SDK snippet with that token: it lists the tools and finds the welcome note
    script = clone.parent / "lens_mcp.py"
    script.write_text(sdk, encoding="utf-8")
    listed = subprocess.run(
        [sys.executable, str(script)], env={**env, "TOKEN": token}, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    tools, *found = listed.stdout.splitlines()
    assert {"read", "grep", "edit", "list_suggestions"} <= set(tools.split(", ")), tools
    assert "Lens/Welcome.md" in found, listed.stdout

    # the person reaches every page the set-up lists, and the editor lets them type
    [document] = httpx.get(
        f"{base}/api/documents?path=Lens/Welcome", headers={"Authorization": f"Bearer {token}"}, timeout=10
    ).json()
    pages = [path.replace("<doc id>", document["doc_id"]) for path in re.findall(r"`(/[^`]*)`", team)]
    assert len(pages) >= 7, pages
    with httpx.Client(base_url=base, timeout=30) as admin:
        admin.get("/admin/login/")
        signed_in = admin.post(
            "/admin/login/",
            data={"username": username, "password": password, "next": "/admin/",
                  "csrfmiddlewaretoken": admin.cookies["csrftoken"]},
        )  # fmt: skip
        assert signed_in.status_code == 302, signed_in.text[:500]
        for page in pages:
            if page.startswith("/admin/auth/"):
                continue  # the administrator's page for adding users, not this person's
            # Tokens need the token permissions, which the Editors group does not give.
            expected = 403 if page == "/admin/lensrelay/apitoken/" else 200
            assert admin.get(page).status_code == expected, page
        editor = admin.get(f"/admin/suggestions/suggestion/document/{document['doc_id']}/edit/")
        assert '"canEdit": true' in editor.text and '"canReview": true' in editor.text
