"""Full-text search over the knowledge base: SQLite FTS5 or PostgreSQL full-text search.

`index` is the backend-neutral service (write, remove, query), `query` parses what people type,
`sqlite` and `postgres` are the two backends, and `maintain` keeps the index current as documents change.
"""
