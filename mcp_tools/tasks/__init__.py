"""Tasks (the Tasks extension, `io.modelcontextprotocol/tasks`): a write tool's call answered with a handle
that completes when a person decides the suggestion it proposed. `records` keeps and finds the rows and
withdraws on request; `outcome` reads what became of the suggestion; `wire` shows a task as `tasks/get` and
`notifications/tasks` carry it. The methods are the transport's (mcp_tools/transport/tasking.py)."""
