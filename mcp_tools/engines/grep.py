"""An in-memory grep over many documents, shaped like ripgrep as Claude Code's Grep drives it.

Output modes: ``files_with_matches`` (one path a line), ``count`` (``path:N``, N matching lines) and
``content`` (``path:line:text`` for matching lines, ``path-line-text`` for context lines, ``--``
between groups that do not touch, and between files, when context is asked for).

Semantics follow ripgrep's: without ``multiline`` each line is searched on its own, so ``^``/``$``
match at line boundaries and no match spans a line break (a pattern that names ``\\n`` is refused
with a hint); with ``multiline`` ``.`` also matches newlines and a match may span lines, every
line it touches being a matching line. ``\\A``/``\\Z`` mean the start and end of a document.
Known differences: lookaheads may see past the end of their line (``foo(?!\\s)`` misses a ``foo``
that ends a line; ripgrep's default engine has no lookarounds at all), and ``$`` does not match
before the "\\r" of a CRLF line (printed lines drop that "\\r", as read shows them).

Speed: documents are not searched line by line. Consecutive documents are joined (with ``"\\n"``)
into chunks of about a megabyte and each chunk is searched in one call, so the per-call overhead
of ``regex`` (larger with a timeout) is paid per chunk, not per note; a match is mapped back to
its document by bisection, and only matching documents are split into lines. A pattern that is a
plain literal is searched with ``str.find`` alone; a regex with a required literal skips documents
without it before any regex runs (case-folded for -i), until most documents turn out to hold it.
Scanning stops as soon as the requested page is full.

Kept joins: the grep tool scans the same kept list of documents call after call, so it joins them once
(`join_docs`, kept by the tool beside the texts within their memory budget) and hands that to every
scan (``joined=``). Joining is then no part of a scan, and every pattern that is not tied to a
document's own start or end (a plain literal too) is searched by `regex` over the kept chunks with
``concurrent=True``, which releases the GIL: two greps, or a grep and the event loop, run on two cores.
A window's documents are joined by storage width (1, 2 or 4 bytes a character), so one emoji does not
widen its neighbours (memory stays about the texts' own; narrow strings scan faster); its matches are
put back in document order.

Every regex call carries ``timeout=`` set to what is left of one overall deadline, so a
catastrophic pattern raises GrepTimeout instead of holding a worker. Note that ``regex`` counts
its timeout in CPU time of the whole process: busy sibling threads make it fire sooner, and a
machine overloaded by other processes lets the wall time run somewhat past ``options.timeout``.
"""

from __future__ import annotations

import re
import sys
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import regex

from mcp_tools.engines.catn import display_line, split_lines

OutputMode = Literal["content", "files_with_matches", "count"]
OUTPUT_MODES: tuple[str, ...] = ("content", "files_with_matches", "count")

NO_MATCHES = "No matches found."

# Joined chunk size: big enough that per-call overhead vanishes, small enough that one non-ASCII
# note widens (to 2 or 4 bytes a character) little text, and early stops stay early. Joining is most of
# a regex grep's cost: over 10,000 mixed-script notes (20 MB) a 1 M-character chunk took 58 ms a grep,
# 128 K 34 ms (a larger string is a fresh mmap whose pages fault in on every join; a smaller one reuses
# the heap), while smaller chunks gained nothing more.
CHUNK_CHARS = 1 << 17
# Documents joined once and kept (`Joined`): about this many characters of consecutive documents a window,
# joined into up to three strings by storage width. Larger than CHUNK_CHARS, as there is no join per scan
# to keep cheap; each chunk is one GIL-free regex call.
WINDOW_CHARS = 1 << 19
# What CPython's header costs a non-ASCII string (its size without the characters and the final NUL).
_HEADER = sys.getsizeof("\xe9") - 2
# Documents checked before a required-literal prefilter that lets most through is dropped.
_PREFILTER_TRIAL = 256
_DOTLESS_I = "\u0131"
_SKIPS_BEFORE_RESTART = 16

_METACHARACTERS = frozenset(".^$*+?{}[]\\|()")
# An inline flag group that applies to the whole pattern, e.g. (?i), (?x), (?V1).
_GLOBAL_FLAGS = re.compile(r"\(\?[\^a-zA-Z\-]+\)")
# Constructs whose meaning depends on where the searched string starts or ends; such patterns are
# run on each document alone rather than on joined chunks.
_NEEDS_OWN_STRING = re.compile(r"\\[AZzG]|\(\?<[=!]")


class GrepError(ValueError):
    """Bad grep input: an invalid pattern or option. The message is meant for the caller."""


class GrepTimeout(GrepError):
    """The search ran past its deadline (usually a pattern with catastrophic backtracking)."""


@dataclass
class GrepOptions:
    pattern: str
    output_mode: OutputMode = "files_with_matches"
    ignore_case: bool = False
    line_numbers: bool = True
    before: int = 0
    after: int = 0
    # When given, sets both before and after (Claude Code passes -C instead of -A/-B).
    context: int | None = None
    multiline: bool = False
    # Output entries to return after skipping `offset`; None or 0 means no limit.
    head_limit: int | None = 250
    offset: int = 0
    # Seconds for the whole search, across all documents.
    timeout: float = 2.0


@dataclass
class GrepResult:
    text: str
    # Documents with at least one match, and matching lines (None in files_with_matches mode,
    # which stops at a document's first match). Scanning stops once the page is full, so when
    # `truncated` is true these are lower bounds.
    files: int
    matches: int | None
    truncated: bool


@dataclass
class _Chunk:
    text: str
    starts: list[int]
    ends: list[int]
    docs: list[tuple[str, str]]
    # Position of each document in the whole list, when the chunk is part of a `Joined` window.
    order: list[int] | None = None


@dataclass
class Joined:
    """``docs`` joined once, for every scan of them to reuse (a kept list of documents is scanned by call
    after call). Consecutive documents form windows of about WINDOW_CHARS characters; a window's documents
    are joined into one string per storage width (1, 2 or 4 bytes a character), so no text is widened
    and ``bytes`` stays about what the texts themselves cost."""

    docs: list[tuple[str, str]]
    windows: list[list[_Chunk]]
    bytes: int


def _width(text: str) -> int:
    """Bytes per character CPython stores ``text`` with (ASCII and Latin-1 both 1)."""
    if text.isascii():
        return 1
    return (sys.getsizeof(text) - _HEADER) // (len(text) + 1)


def join_docs(docs: list[tuple[str, str]]) -> Joined:
    """Join ``docs`` for `grep_result` (``joined=``) to scan without joining them again."""
    windows: list[list[_Chunk]] = []
    pending: dict[int, list[int]] = {}
    size = 0

    def flush() -> None:
        windows.append([_join([docs[i] for i in order], order) for order in pending.values()])
        pending.clear()

    for number, (_, text) in enumerate(docs):
        pending.setdefault(_width(text), []).append(number)
        size += len(text) + 1
        if size >= WINDOW_CHARS:
            flush()
            size = 0
    if pending:
        flush()
    total = sum(sys.getsizeof(chunk.text) for window in windows for chunk in window if len(chunk.docs) > 1)
    return Joined(docs=docs, windows=windows, bytes=total)


def grep(docs: Iterable[tuple[str, str]], options: GrepOptions) -> str:
    """The text of `grep_result`."""
    return grep_result(docs, options).text


def grep_result(
    docs: Iterable[tuple[str, str]],
    options: GrepOptions,
    *,
    paused: Callable[[], float] | None = None,
    joined: Joined | None = None,
) -> GrepResult:
    """Search ``docs`` — (user path, text) pairs, already scoped and in output order.

    Raises GrepError for an invalid pattern or option and GrepTimeout when the search outlives
    ``options.timeout`` seconds. ``docs`` may produce its texts lazily (loading them as the scan goes):
    ``paused`` then says how many seconds so far went into producing them, which the deadline leaves out.
    ``joined``, when given, is `join_docs` of ``docs`` (the same list), scanned instead of joining again.
    """
    _validate(options)
    if options.context is not None:
        before = after = options.context
    else:
        before, after = options.before, options.after
    scanner = _Scanner(options, paused=paused)
    mode = options.output_mode
    limit = options.head_limit or None
    wanted = None if limit is None else options.offset + limit + 1
    separated = mode == "content" and (before > 0 or after > 0)

    entries: list[str] = []
    files = 0
    match_lines = 0
    if joined is not None and joined.docs is not docs:
        joined = None  # not these documents
    for path, text, lines in scanner.matching_docs(docs, joined):
        files += 1
        match_lines += len(lines)
        if mode == "files_with_matches":
            entries.append(path)
        elif mode == "count":
            entries.append(f"{path}:{len(lines)}")
        else:
            if separated and entries:
                entries.append("--")
            entries.extend(_content_block(path, text, lines, before, after, options.line_numbers))
        if wanted is not None and len(entries) >= wanted:
            break

    matches = None if mode == "files_with_matches" else match_lines
    if not entries:
        return GrepResult(text=NO_MATCHES, files=0, matches=matches, truncated=False)

    offset = options.offset
    end = len(entries) if limit is None else offset + limit
    page = entries[offset:end]
    truncated = len(entries) > end
    if not page:
        return GrepResult(
            text=f"No matches found at offset {offset}: there are only {len(entries)} results.",
            files=files,
            matches=matches,
            truncated=False,
        )
    shown = len(page)
    # A group separator reads oddly as the first or last line of a page.
    if len(page) > 1 and page[0] == "--":
        page = page[1:]
    if len(page) > 1 and page[-1] == "--":
        page = page[:-1]
    text = "\n".join(page)
    if truncated:
        text += (
            f"\n\n[Showing results {offset + 1}-{offset + shown}; more exist. "
            f"Call grep again with offset={offset + shown} to see more.]"
        )
    elif offset:
        text += f"\n\n[Showing results {offset + 1}-{offset + shown} of {len(entries)}.]"
    return GrepResult(text=text, files=files, matches=matches, truncated=truncated)


def _validate(options: GrepOptions) -> None:
    if not isinstance(options.pattern, str):
        raise GrepError("pattern must be a string.")
    if options.output_mode not in OUTPUT_MODES:
        raise GrepError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}; got {options.output_mode!r}.")
    for name in ("before", "after", "context", "offset", "head_limit"):
        value = getattr(options, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise GrepError(f"{name} must be a whole number of 0 or more; got {value!r}.")
    if not options.timeout > 0:
        raise GrepError(f"timeout must be positive; got {options.timeout!r}.")


def plain_literal(pattern: str) -> str | None:
    """The pattern itself when it has no regex metacharacter (so it matches only itself)."""
    if pattern and not any(char in _METACHARACTERS for char in pattern):
        return pattern
    return None


def required_literal(pattern: str) -> str | None:
    """The longest run of literal text every match of ``pattern`` must contain, or None.

    Conservative by design: top-level alternation, global inline flags or anything not understood
    gives None (no prefilter), never a literal that a match could lack. Groups and classes end a
    run; a quantifier that allows zero repeats drops the atom before it.
    """
    if _GLOBAL_FLAGS.search(pattern) or not _single_branch(pattern):
        return None
    best = ""
    run: list[str] = []

    def close_run() -> None:
        nonlocal best
        joined = "".join(run)
        if len(joined) > len(best):
            best = joined
        run.clear()

    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        literal: str | None = None
        if char == "|" or char == ")":
            return None
        if char == "\\":
            if i + 1 >= n:
                return None
            escaped = pattern[i + 1]
            if escaped.isalnum() or escaped == "_":
                break  # \d, \b, \x41, \1, \p{L}...: stop rather than parse every escape form
            literal = escaped
            i += 2
        elif char == "(":
            end = _group_end(pattern, i)
            if end is None:
                return None
            i = end + 1
        elif char == "[":
            end = _class_end(pattern, i)
            if end is None:
                return None
            i = end + 1
        elif char in ".^$":
            i += 1
        elif char in "*+?{":
            return None  # a quantifier with nothing to repeat: leave it to the compiler
        else:
            literal = char
            i += 1

        quantifier = pattern[i] if i < n else ""
        if quantifier in ("*", "?", "{"):
            close_run()
            if quantifier == "{":
                break  # {m,n} (or a literal brace): stop here, the atom may repeat zero times
            i += 1
            if i < n and pattern[i] in "?+":
                i += 1
        elif quantifier == "+":
            if literal is not None:
                run.append(literal)
            close_run()
            i += 1
            if i < n and pattern[i] in "?+":
                i += 1
        elif literal is not None:
            run.append(literal)
        else:
            close_run()
    close_run()
    return best or None


def _single_branch(pattern: str) -> bool:
    """True when the pattern has no top-level "|" and its groups and classes can be skipped."""
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            i += 2
        elif char == "|":
            return False
        elif char in "([":
            end = _group_end(pattern, i) if char == "(" else _class_end(pattern, i)
            if end is None:
                return False
            i = end + 1
        else:
            i += 1
    return True


def _class_end(pattern: str, start: int) -> int | None:
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            return None  # POSIX classes or nested sets: not worth understanding here
        if char == "]":
            return i
        i += 1
    return None


def _group_end(pattern: str, start: int) -> int | None:
    depth = 0
    i = start
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end is None:
                return None
            i = end + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _names_newline(pattern: str) -> bool:
    """True when the pattern spells a line break outside a character class (a real newline or
    ``\\n``), which can never match while lines are searched one at a time."""
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 < n and pattern[i + 1] == "n":
                return True
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end is None:
                return False
            i = end + 1
            continue
        if char == "\n":
            return True
        i += 1
    return False


class _Scanner:
    """Finds matching documents and their matching lines (0-based, ascending)."""

    def __init__(self, options: GrepOptions, *, paused: Callable[[], float] | None = None) -> None:
        pattern = options.pattern
        self.multiline = options.multiline
        self.first_only = options.output_mode == "files_with_matches"
        self.timeout = options.timeout
        self._deadline = time.monotonic() + options.timeout
        self._paused = paused
        verbose = any("x" in flags.group() for flags in _GLOBAL_FLAGS.finditer(pattern))
        if not options.multiline and not verbose and _names_newline(pattern):
            raise GrepError(
                "The pattern matches a line break, but lines are searched one at a time. "
                "Set multiline to true to match across lines."
            )
        flags = regex.MULTILINE
        if options.ignore_case:
            flags |= regex.IGNORECASE
        if options.multiline:
            flags |= regex.DOTALL
        try:
            self.compiled = regex.compile(pattern, flags)
        except (regex.error, OverflowError, RecursionError) as error:
            raise GrepError(f"Invalid regular expression {pattern!r}: {error}") from None

        self.ignore_case = options.ignore_case
        self.literal = None if options.ignore_case else plain_literal(pattern)
        required = required_literal(pattern)
        self.prefilter: str | None = None
        if required is not None:
            self.prefilter = fold_case(required) if options.ignore_case else required
        self.own_string = bool(_NEEDS_OWN_STRING.search(pattern))

    def matching_docs(
        self, docs: Iterable[tuple[str, str]], joined: Joined | None = None
    ) -> Iterator[tuple[str, str, list[int]]]:
        if joined is not None and not self.own_string:
            yield from self._joined_docs(joined)
            return
        if self.literal is not None:
            yield from self._literal_docs(docs, self.literal)
            return
        for chunk in self._chunks(self._candidates(docs)):
            if self.first_only:
                found = self._first_matches(chunk)
            else:
                found = self._matching_lines(chunk, 0, len(chunk.text))
            for index, lines in found:
                path, text = chunk.docs[index]
                yield path, text, lines

    def _joined_docs(self, joined: Joined) -> Iterator[tuple[str, str, list[int]]]:
        """Matches over kept joined windows: every chunk is searched by `regex` without the GIL (a
        literal too), so scans in other threads run meanwhile; a window's matches are put back in
        document order before they are handed on."""
        for window in joined.windows:
            self._check_deadline()
            found: list[tuple[int, tuple[str, str], list[int]]] = []
            for chunk in window:
                order = chunk.order
                assert order is not None
                if self.first_only:
                    hits = self._first_matches(chunk)
                else:
                    hits = self._matching_lines(chunk, 0, len(chunk.text))
                for index, lines in hits:
                    found.append((order[index], chunk.docs[index], lines))
            if len(window) > 1:
                found.sort(key=_first)
            for _, (path, text), lines in found:
                yield path, text, lines

    # -- plain literal: str.find only -------------------------------------------------------

    def _literal_docs(
        self, docs: Iterable[tuple[str, str]], literal: str
    ) -> Iterator[tuple[str, str, list[int]]]:
        width = len(literal)
        for number, (path, text) in enumerate(docs):
            if number % 256 == 0:
                self._check_deadline()
            found = text.find(literal)
            if found < 0:
                continue
            if self.first_only:
                yield path, text, []
                continue
            lines: list[int] = []
            line, line_pos = 0, 0
            while found >= 0:
                line += text.count("\n", line_pos, found)
                line_pos = found
                if self.multiline:
                    last = line + text.count("\n", found, found + width - 1)
                    lines.extend(range(max(line, lines[-1] + 1) if lines else line, last + 1))
                    found = text.find(literal, found + width)
                else:
                    lines.append(line)
                    line_end = text.find("\n", found)
                    if line_end < 0:
                        break
                    found = text.find(literal, line_end + 1)
            yield path, text, lines

    # -- regex over joined chunks -----------------------------------------------------------

    def _candidates(self, docs: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
        """Documents that can match: those holding the required literal. The check is dropped
        once it has proved useless (most documents pass), since the regex rescans them anyway."""
        needle = self.prefilter
        checked = passed = 0
        for number, (path, text) in enumerate(docs):
            if number % 256 == 0:
                self._check_deadline()
            if needle is not None:
                found = needle in (fold_case(text) if self.ignore_case else text)
                checked += 1
                passed += found
                if checked == _PREFILTER_TRIAL and passed * 4 > checked * 3:
                    needle = None
                if not found:
                    continue
            yield path, text

    def _chunks(self, docs: Iterable[tuple[str, str]]) -> Iterator[_Chunk]:
        pending: list[tuple[str, str]] = []
        size = 0
        for path, text in docs:
            if self.own_string:
                yield _Chunk(text=text, starts=[0], ends=[len(text)], docs=[(path, text)])
                continue
            pending.append((path, text))
            size += len(text) + 1
            if size >= CHUNK_CHARS:
                yield _join(pending)
                pending, size = [], 0
        if pending:
            yield _join(pending)

    def _first_matches(self, chunk: _Chunk) -> Iterator[tuple[int, list[int]]]:
        """Indexes of the chunk's documents with a match: one match each, then on to the next."""
        text, starts, ends = chunk.text, chunk.starts, chunk.ends
        pos, size = 0, len(text)
        while pos <= size:
            match = self._search(text, pos, size)
            if match is None:
                return
            start, end = match.span()
            index = bisect_right(starts, start) - 1
            doc_start, doc_end = starts[index], ends[index]
            no_line_at_end = doc_start == doc_end or text[doc_end - 1] == "\n"
            clean = end <= doc_end and not (start == doc_end and no_line_at_end)
            if clean and (self.multiline or text.find("\n", start, end) < 0):
                yield index, []
            elif any(lines for _, lines in self._matching_lines(chunk, doc_start, doc_end, first_only=True)):
                # The match ran past its document (an artefact of joining) or over a line
                # break, yet the document, searched on its own terms, has one.
                yield index, []
            pos = doc_end + 1

    def _matching_lines(
        self, chunk: _Chunk, low: int, high: int, first_only: bool = False
    ) -> Iterator[tuple[int, list[int]]]:
        """(document index, matching lines) for the documents of chunk.text[low:high], from one
        pass of finditer, restarted only after a match that ran over a line or document end.
        [low, high] is the whole chunk or exactly one document."""
        text, starts, ends = chunk.text, chunk.starts, chunk.ends
        index, doc_start, doc_end = -1, 0, -1
        no_line_at_end = False
        lines: list[int] = []
        line = line_pos = 0
        done_to = -1  # end of the last line already settled
        skipped = 0
        pos = low
        while pos <= high:
            restart = -1
            for seen, match in enumerate(self._finditer(text, pos, high)):
                if seen % 1024 == 1023:
                    self._check_deadline()
                start, end = match.span()
                if start > doc_end:
                    if lines:
                        yield index, lines
                    index = bisect_right(starts, start) - 1
                    doc_start, doc_end = starts[index], ends[index]
                    no_line_at_end = doc_start == doc_end or text[doc_end - 1] == "\n"
                    lines = []
                    line, line_pos, done_to = 0, doc_start, -1
                if start <= done_to:
                    # Another match on a line already counted. If it runs on past that line it
                    # may hide the next line's own match; and many of them (say, every empty
                    # match of x*) cost more to step over than a fresh search from the next line.
                    skipped += 1
                    if end > done_to or skipped > _SKIPS_BEFORE_RESTART:
                        restart = done_to + 1
                        break
                    continue
                skipped = 0
                if start == doc_end and no_line_at_end:
                    if end > start:
                        restart = doc_end + 1
                        break
                    continue  # ^ or $ after the final newline, where there is no line
                if end > doc_end and self.multiline:
                    # Joining let the match run into the next document: redo this one alone.
                    redone = list(self._matching_lines(chunk, doc_start, doc_end))
                    lines = redone[0][1] if redone else []
                    done_to = doc_end
                    restart = doc_end + 1
                    break
                line += text.count("\n", line_pos, start)
                line_pos = start
                if self.multiline:
                    last = line + text.count("\n", start, max(start, end - 1))
                    lines.extend(range(max(line, lines[-1] + 1) if lines else line, last + 1))
                else:
                    line_end = text.find("\n", start, doc_end)
                    if line_end < 0:
                        line_end = doc_end
                    done_to = line_end
                    if end > line_end:
                        # The match ran over a line break, and lines are searched one at a
                        # time: try this line alone, then carry on after it.
                        if self._line_matches(text, doc_start, start, line_end):
                            lines.append(line)
                        restart = line_end + 1
                        break
                    lines.append(line)
                if first_only and lines:
                    yield index, lines
                    return
            if restart < 0:
                break
            pos = restart
        if lines:
            yield index, lines

    def _line_matches(self, text: str, doc_start: int, position: int, line_end: int) -> bool:
        newline = text.rfind("\n", doc_start, position)
        line_start = doc_start if newline < 0 else newline + 1
        return self._search(text, line_start, line_end) is not None

    def _search(self, text: str, pos: int, endpos: int) -> regex.Match[str] | None:
        try:
            return self.compiled.search(
                text, pos=pos, endpos=endpos, concurrent=True, timeout=self._remaining()
            )
        except TimeoutError:
            raise self._timeout_error() from None

    def _finditer(self, text: str, pos: int, endpos: int) -> Iterator[regex.Match[str]]:
        # The regex module's timeout bounds the whole iteration, not each step.
        iterator = self.compiled.finditer(
            text, pos=pos, endpos=endpos, concurrent=True, timeout=self._remaining()
        )
        try:
            yield from iterator
        except TimeoutError:
            raise self._timeout_error() from None

    @property
    def deadline(self) -> float:
        return self._deadline if self._paused is None else self._deadline + self._paused()

    def _remaining(self) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout_error()
        return remaining

    def _check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise self._timeout_error()

    def _timeout_error(self) -> GrepTimeout:
        return GrepTimeout(
            f"The search took longer than {self.timeout:g} seconds and was stopped. Simplify the "
            "pattern (nested quantifiers such as (a|aa)+ backtrack catastrophically) or narrow the "
            "search with path or glob."
        )


def fold_case(text: str) -> str:
    """Case folding for the -i prefilter: any two characters `regex` matches case-insensitively
    fold alike here (checked over all of Unicode), so a folded literal missing from a folded text
    proves there is no match. `regex` also pairs "I" with the dotless i (U+0131), which casefold
    keeps apart."""
    folded = text.casefold()
    return folded.replace(_DOTLESS_I, "i") if _DOTLESS_I in folded else folded


def _first(item: tuple[int, tuple[str, str], list[int]]) -> int:
    return item[0]


def _join(docs: list[tuple[str, str]], order: list[int] | None = None) -> _Chunk:
    if len(docs) == 1:
        text = docs[0][1]
        return _Chunk(text=text, starts=[0], ends=[len(text)], docs=docs, order=order)
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    for _, text in docs:
        starts.append(position)
        position += len(text)
        ends.append(position)
        position += 1
    return _Chunk(text="\n".join(text for _, text in docs), starts=starts, ends=ends, docs=docs, order=order)


def _content_block(
    path: str, text: str, matched: list[int], before: int, after: int, line_numbers: bool
) -> list[str]:
    """ripgrep's content lines for one document: ':' after match lines, '-' after context lines,
    '--' between groups that neither overlap nor touch."""
    lines = split_lines(text)
    last_index = len(lines) - 1
    is_match = set(matched)
    out: list[str] = []
    printed_to = -1
    for index in matched:
        group_start = max(index - before, 0)
        if printed_to >= 0 and group_start > printed_to + 1 and (before or after):
            out.append("--")
        for shown in range(max(group_start, printed_to + 1), min(index + after, last_index) + 1):
            mark = ":" if shown in is_match else "-"
            line = display_line(lines[shown])
            out.append(f"{path}{mark}{shown + 1}{mark}{line}" if line_numbers else f"{path}{mark}{line}")
            printed_to = shown
    return out
