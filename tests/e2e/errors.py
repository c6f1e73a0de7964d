"""What a client's failure was made of: the SDKs' task groups wrap it in exception groups, as deep as
their tasks nest, so a test looks for the error among the leaves."""

from __future__ import annotations


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]
