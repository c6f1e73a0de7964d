"""Text helpers: texts in memory, lines, storable Unicode, path grammar, frontmatter and wikilink syntax."""
