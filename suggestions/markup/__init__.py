"""The pure rules of CriticMarkup: parsing and writing marks, word diffs, rewriting a proposal into markup,
the accepted view, undo records and the markup's integrity check; the typed records a suggestion row keeps
(``records``) and short previews of a change (``shown``).

Plain text in, plain text and spans out (Python ``str`` indices): no Django, no pycrdt, no ``lensrelay``
(an import contract in pyproject.toml holds it), so it is tested without a database or a document.
"""
