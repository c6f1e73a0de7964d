from __future__ import annotations

import random
import sqlite3

import pytest

from lensrelay.search.query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    Clause,
    QueryError,
    Term,
    fts5_expression,
    parse_query,
    postgres_expression,
)

HOSTILE = [
    '"',
    '""',
    '"unterminated phrase',
    "a AND",
    "OR a OR",
    "a OR OR b",
    "NOT a b",
    "a NOT",
    "NEAR(a b, 2)",
    "title:chloroplast",
    "^start",
    "a + b",
    "col:* {a b}",
    "a) (b",
    "'single' quotes",
    "back\\slash",
    "*",
    "a**",
    "-a -b c",
    'say"hi"there',
    "e-mail c++ 100%",
    "🙂 emoji 🙂",
    "光合作用*",
    "Über OR über",
    "x\x00y",
    "a:*",
    "!!a & b | c <-> d",
    "'a':* & !b",
]


def test_words_are_all_required() -> None:
    parsed = parse_query("cell theory")
    assert parsed.clauses == (Clause((Term("cell"),)), Clause((Term("theory"),)))
    assert fts5_expression(parsed) == '("cell") AND ("theory")'


def test_phrases_prefixes_or_and_exclusion() -> None:
    parsed = parse_query('"cell theory" photo* thylakoid OR grana -animal NOT plant AND light')
    assert parsed.required == (
        Clause((Term("cell theory"),)),
        Clause((Term("photo", prefix=True),)),
        Clause((Term("thylakoid"), Term("grana"))),
        Clause((Term("light"),)),
    )
    assert parsed.excluded == (
        Clause((Term("animal"),), negated=True),
        Clause((Term("plant"),), negated=True),
    )
    assert fts5_expression(parsed) == (
        '(("cell theory") AND ("photo" *) AND ("thylakoid" OR "grana") AND ("light"))'
        ' NOT (("animal") OR ("plant"))'
    )


def test_stray_quotes_split_terms_instead_of_breaking_the_syntax() -> None:
    # A quote always starts a phrase (closed or not), so no term can carry one into the expression.
    assert fts5_expression(parse_query('it"s')) == '("it") AND ("s")'
    assert fts5_expression(parse_query('-"x" y')) == '(("y")) NOT (("x"))'


def test_terms_without_letters_or_digits_are_dropped() -> None:
    parsed = parse_query("cell -- ** ... !! theory")
    assert [c.alternatives[0].text for c in parsed.clauses] == ["cell", "theory"]


def test_unsearchable_queries_explain_themselves() -> None:
    with pytest.raises(QueryError, match="no words"):
        parse_query("")
    with pytest.raises(QueryError, match="no words"):
        parse_query('  "" * -- ')
    with pytest.raises(QueryError, match="only excludes"):
        parse_query("-chloroplast")
    with pytest.raises(QueryError, match="too long"):
        parse_query("a" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(QueryError, match="too many terms"):
        parse_query(" ".join(f"w{i}" for i in range(MAX_TERMS + 1)))


def test_postgres_expression_keeps_user_text_in_parameters() -> None:
    sql, params = postgres_expression(parse_query('it\'s photo* -"a b" x OR y'))
    assert params == ["it's", "photo", "x", "y", "a b"]
    assert "it's" not in sql and "photo" not in sql
    assert sql.count("%s") == len(params)
    assert ":*" in sql and "!!" in sql and "||" in sql


def _fts5_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(title, meta, body, tokenize='unicode61 remove_diacritics 2')"
    )
    conn.execute(
        "INSERT INTO t VALUES ('Cell Theory', 'tags: biology', 'All living things are made of cells.')"
    )
    return conn


FUZZ_PIECES = [
    *("ab", "OR", "AND", "NOT", "NEAR", "-", "+", "*", "(", ")", ":", "^", "{", "}", "'", "\\"),
    *(",", ".", "|", "&", "!", "<", ">", "ü", "光", "🙂", "\t", " ", " ", '"', '"', "*"),
]


def _random_queries(count: int) -> list[str]:
    rng = random.Random(20261122)
    return ["".join(rng.choice(FUZZ_PIECES) for _ in range(rng.randint(1, 12))) for _ in range(count)]


def test_no_input_makes_an_fts5_syntax_error() -> None:
    conn = _fts5_table()
    checked = 0
    for text in HOSTILE + _random_queries(2000):
        try:
            expression = fts5_expression(parse_query(text))
        except QueryError:
            continue
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()  # must not raise
        checked += 1
    assert checked > 500


def test_a_prefix_and_a_phrase_match_in_fts5() -> None:
    conn = _fts5_table()

    def hits(text: str) -> int:
        return len(
            conn.execute(
                "SELECT rowid FROM t WHERE t MATCH ?", (fts5_expression(parse_query(text)),)
            ).fetchall()
        )

    assert hits("cel*") == 1
    assert hits('"living things"') == 1
    assert hits('"things living"') == 0
    assert hits("cells -biology") == 0
    assert hits("zebra OR cells") == 1
