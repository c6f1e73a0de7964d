"""Who is calling `/mcp`, and what their sessions hold: in the database so every worker sees them, kept in
each process's memory while nothing about credentials changed.

- `memory`: tokens, session rows and read marks this process keeps, dropped when the credential counter
  moves (revocation stays immediate).
- `sessions`: services for MCP sessions and read marks.
- `trips`: the counter read and the read marks, coalesced into one trip to the database.
"""
