"""The MCP Apps review (SEP-1865): a `ui://` page that shows pending suggestions as a diff in context, with
Accept, Reject and a note, inside the chat client. The model calls `review_suggestions` (its result names the
page); the page decides through the app-only `review_decide`, as the person who granted the OAuth access.

`app_keys`: the guard that keeps app-only tools out of the model's reach; `reviewer`: who may decide;
`shown`: what the page shows; `page`: the bundled page itself.
"""

REVIEW_APP_URI = "ui://lensrelay/review"
# The MIME type of an MCP Apps page (the ext-apps SDK's RESOURCE_MIME_TYPE).
APP_MIME_TYPE = "text/html;profile=mcp-app"
# Where a review result's `_meta` hands the page its key (mcp_tools/reviewing/app_keys.py).
APP_META_KEY = "lensrelay/review"
