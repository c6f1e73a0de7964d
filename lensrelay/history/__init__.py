"""Version history of documents: retained states, listing, and restoring an old text as a new change."""
