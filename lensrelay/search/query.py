"""Search queries as people type them, parsed into a small tree both backends can render safely.

The syntax is the familiar web-search one: words are all required, `"a phrase"` keeps its words together,
`word*` matches a prefix, `OR` between two items accepts either, and `-word` excludes. Nothing a user
types can produce a syntax error in FTS5 or PostgreSQL: every term reaches the database as quoted text
or as a bound parameter, and terms with nothing searchable in them are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32

_TOKEN = re.compile(r'(?P<neg>-)?"(?P<phrase>[^"]*)"?(?P<star>\*+)?|(?P<word>[^\s"]+)')


class QueryError(ValueError):
    """The query cannot be searched; the message says why and what to type instead."""


@dataclass(frozen=True)
class Term:
    text: str  # as typed, without quotes, the leading '-' or the trailing '*'
    prefix: bool = False


@dataclass(frozen=True)
class Clause:
    """One required (or, when negated, excluded) item: any of its alternatives matches it."""

    alternatives: tuple[Term, ...]
    negated: bool = False


@dataclass(frozen=True)
class ParsedQuery:
    clauses: tuple[Clause, ...]

    @property
    def required(self) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if not c.negated)

    @property
    def excluded(self) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if c.negated)


def searchable(text: str) -> bool:
    """Whether a term holds anything a tokenizer keeps (letters or digits)."""
    return any(ch.isalnum() for ch in text)


def parse_query(text: str) -> ParsedQuery:
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"Search query is too long ({len(text)} characters, at most {MAX_QUERY_CHARS}).")
    text = text.replace("\x00", " ")
    clauses: list[Clause] = []
    pending_or = False
    negate_next = False
    for match in _TOKEN.finditer(text):
        word = match.group("word")
        if word is not None:
            if word in ("OR", "|"):
                pending_or = True
                continue
            if word in ("AND", "&&", "+"):
                continue
            if word == "NOT":
                negate_next = True
                continue
            negated = word.startswith("-") and len(word) > 1
            body = word[1:] if negated else word
            prefix = body.endswith("*")
            term = Term(text=body.rstrip("*"), prefix=prefix)
        else:
            negated = match.group("neg") is not None
            term = Term(text=match.group("phrase"), prefix=match.group("star") is not None)
        negated = negated or negate_next
        negate_next = False
        if not searchable(term.text):
            continue
        previous = clauses[-1] if clauses else None
        if pending_or and previous is not None and not previous.negated and not negated:
            clauses[-1] = Clause(alternatives=(*previous.alternatives, term))
        else:
            clauses.append(Clause(alternatives=(term,), negated=negated))
        pending_or = False
    parsed = ParsedQuery(clauses=tuple(clauses))
    if sum(len(c.alternatives) for c in parsed.clauses) > MAX_TERMS:
        raise QueryError(f"Search query has too many terms (at most {MAX_TERMS}).")
    if not parsed.required:
        if parsed.excluded:
            raise QueryError(
                "Search query only excludes terms: add at least one word to look for "
                '(e.g. "photosynthesis -light").'
            )
        raise QueryError(
            'Search query has no words to look for. Use words, "exact phrases", prefix* or a OR b.'
        )
    return parsed


def _fts5_term(t: Term) -> str:
    quoted = '"' + t.text.replace('"', '""') + '"'
    return quoted + " *" if t.prefix else quoted


def fts5_expression(parsed: ParsedQuery) -> str:
    """An FTS5 MATCH expression: every term a quoted string, so user text is never FTS5 syntax."""

    def clause(c: Clause) -> str:
        return "(" + " OR ".join(_fts5_term(t) for t in c.alternatives) + ")"

    expression = " AND ".join(clause(c) for c in parsed.required)
    if parsed.excluded:
        # One NOT with every exclusion OR-ed: chained NOTs would associate the wrong way.
        excluded = " OR ".join(clause(c) for c in parsed.excluded)
        expression = f"({expression}) NOT ({excluded})"
    return expression


def fts5_any_required(parsed: ParsedQuery) -> str:
    """An FTS5 MATCH expression for any term the query looks for (those of its required clauses, phrases
    as phrases)."""
    return "(" + " OR ".join(_fts5_term(t) for c in parsed.required for t in c.alternatives) + ")"


def fts5_in_column(parsed: ParsedQuery, column: str) -> str:
    """`fts5_any_required` in one column only."""
    return "{" + column + "} : " + fts5_any_required(parsed)


def _postgres_term(t: Term, params: list[str], config: str) -> str:
    params.append(t.text)
    phrase = f"phraseto_tsquery('{config}', %s)"
    if not t.prefix:
        return phrase
    # The prefix marker goes on the phrase's last lexeme; tsquery's own text form does the quoting.
    return f"(SELECT CASE WHEN numnode(p) = 0 THEN p ELSE (p::text || ':*')::tsquery END FROM {phrase} AS p)"


def postgres_expression(parsed: ParsedQuery, *, config: str = "simple") -> tuple[str, list[str]]:
    """A tsquery SQL expression and its parameters; user text only ever travels as a parameter."""
    params: list[str] = []

    def clause(c: Clause) -> str:
        return "(" + " || ".join(_postgres_term(t, params, config) for t in c.alternatives) + ")"

    expression = " && ".join(clause(c) for c in parsed.required)
    for excluded in parsed.excluded:
        expression = f"({expression}) && !!{clause(excluded)}"
    return expression, params


def postgres_any_required(parsed: ParsedQuery, *, config: str = "simple") -> tuple[str, list[str]]:
    """A tsquery SQL expression matching any term the query looks for (those of its required clauses)."""
    params: list[str] = []
    terms = [_postgres_term(t, params, config) for c in parsed.required for t in c.alternatives]
    return "(" + " || ".join(terms) + ")", params
