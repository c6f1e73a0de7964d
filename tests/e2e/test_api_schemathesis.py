"""schemathesis over /api, from the OpenAPI schema the live server serves: no 5xx, and errors are JSON.

Positive and negative cases for every operation, with a valid, a view-only, a wrong and no token, against a
server holding a small vault (so queries find something). Bounded: a few hundred requests in all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from .relay import Relay

EXAMPLES_PER_OPERATION = 60


@pytest.fixture(scope="module")
def api_relay(relay: Relay, tmp_path_factory: pytest.TempPathFactory) -> Relay:
    vault: Path = tmp_path_factory.mktemp("api-vault")
    (vault / "Notes").mkdir()
    (vault / "Welcome.md").write_text("# Welcome\n", encoding="utf-8")
    (vault / "Notes" / "Ideas ünïcödé.md").write_text("ideas\n", encoding="utf-8")
    relay.import_vault(vault, folder="Api")
    return relay


def test_api_answers_no_5xx_to_generated_requests(api_relay: Relay) -> None:
    schema = schemathesis.openapi.from_url(f"{api_relay.http_url}/api/openapi.json")
    tokens = [api_relay.tokens["edit"], api_relay.tokens["view"], "lr_not-a-token", None]
    # The ninja operations and y-sweet's JSON routes; the binary, multipart, HEAD and MCP routes have their
    # own tests (their bodies are not JSON Schema shaped).
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if op.path.startswith(("/api/", "/check_store", "/doc/new", "/doc/{doc_id}/auth"))
    ]
    assert {op.path for op in operations} >= {"/api/folders", "/api/documents"}
    calls: dict[str, int] = {}
    for operation in operations:
        cases = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
        )

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases, token=st.sampled_from(tokens))
        def check(case: Any, token: str | None) -> None:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            response = case.call(base_url=api_relay.http_url, headers=headers, timeout=30)
            calls[case.path] = calls.get(case.path, 0) + 1
            case.validate_response(response, checks=[not_a_server_error])
            if response.status_code >= 400:
                content_type = response.headers.get("content-type") or [""]  # a list per header here
                assert content_type[0].startswith("application/json"), (
                    f"{case.method} {case.formatted_path} {case.query}: {response.status_code} "
                    f"{content_type} {response.text[:200]}"
                )

        check()
    assert all(count >= 10 for count in calls.values()), calls
