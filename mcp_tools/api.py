"""`/mcp` in Django's URLconf: one django-ninja operation for POST, GET and DELETE, answered by
`mcp_tools.endpoint`.

The ASGI application sends `/mcp` to `mcp_tools.endpoint` directly (`mcp_tools.lean`); this mount serves
requests that reach Django's URL routing (e.g. Django's test client) the same way.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from ninja import NinjaAPI

from mcp_tools.endpoint import answer
from mcp_tools.transport.versions import server_version

mcp_api = NinjaAPI(
    title="Lens Relay MCP",
    version=server_version(),
    urls_namespace="mcp",
    docs_url=None,
    openapi_url=None,
)


@mcp_api.api_operation(["POST", "GET", "DELETE"], "", include_in_schema=False)
async def mcp_endpoint(request: HttpRequest) -> HttpResponseBase:
    return await answer(request)


# Mount with `path("mcp", urls)`.
urls = mcp_api.urls
