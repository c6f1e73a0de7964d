"""Pure text rules, below everything else (the models use them too): lines, storable Unicode, path grammar
and name folding, frontmatter and wikilink syntax. Nothing here knows Django or the document store."""
