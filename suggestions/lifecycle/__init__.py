"""What happens to a suggestion on the live documents: proposing (planning, file texts, creates, moves),
deciding through one claim, undo, rollback, restore, clean-up, purge, and the follower that keeps rows in
step with edits made in the editors. Built on ``suggestions.markup``; the review pages sit above it.
"""
