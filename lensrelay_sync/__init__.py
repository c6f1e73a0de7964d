"""lensrelay-sync: keep a directory on disk and a Lens Relay folder equal, both ways, live (issue #35).

People keep their editor (Obsidian, VS Code, any editor that saves files); the server keeps the truth. Each
note is a Yjs document: a save on disk becomes the smallest edit of it, a change made anywhere else is
written to the file. A client of the server like any other Yjs client: it imports nothing of Django or of
the server's apps (an import contract in pyproject.toml holds it), only the pure path rules and wire framing.
"""
