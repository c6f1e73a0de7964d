"""What the tools share, none of it a tool (so nothing here registers one).

- `writing`: what every write tool checks and says (who proposes, read-before-edit, refusals).
- `edit_replies`: how `edit` and `multi_edit` answer.
- `files`: what the tools do with files that are not notes.
- `search_scope`: where `search` and `semantic_search` look.
- `hybrid`: `search`'s ranking, full text blended with meaning.
"""
