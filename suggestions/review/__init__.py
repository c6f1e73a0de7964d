"""The reviewer's pages in the admin: the review page, the live editor page and its file tree endpoints,
the rollback page, the admin's views and confirmations, and markdown rendering. Thin: they parse the
request and call ``suggestions.lifecycle``.
"""
