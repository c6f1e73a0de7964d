"""The vault's rules: paths, folders and their folder-document mirror, moves, trash, purge, import/export."""
