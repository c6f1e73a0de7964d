// CriticMarkup in the browser: the same marks suggestions/markup/criticmarkup.py finds (non-greedy, no nesting,
// optional `{json}@@` metadata), grouped into changes by their suggestion id. Positions are JavaScript
// string (UTF-16) indices, which is what CodeMirror and Y.Text use.

const OPENING = /\{(?:\+\+|--|~~|==|>>)/g;
const CLOSING = {
  "{++": ["addition", "++}"],
  "{--": ["deletion", "--}"],
  "{~~": ["substitution", "~~}"],
  "{==": ["highlight", "==}"],
  "{>>": ["comment", "<<}"],
};
const WIDTH = 3;

function splitMetadata(body) {
  if (!body.startsWith("{")) return [null, 0];
  // The metadata is the JSON object at the start of the body, followed by "@@". The server escapes "@@"
  // inside its strings, but other writers may not: a "}@@" inside a string is skipped, as the server's
  // parser skips it. An object's text ends at exactly one "}", so the first "}@@" that ends valid JSON is it.
  for (let end = body.indexOf("}@@"); end >= 0; end = body.indexOf("}@@", end + 1)) {
    let value;
    try {
      value = JSON.parse(body.slice(0, end + 1));
    } catch {
      continue;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [null, 0];
    return [value, end + 3];
  }
  return [null, 0];
}

// -- the scan ------------------------------------------------------------------------------------------------
//
// One left-to-right scan, as the server's: at each opening delimiter, the first closing of its kind after it
// ends the mark (or, with none anywhere after it, no opening of that kind can close again: skipped from then
// on); a substitution without "~>" is no mark, and no "{~~" before its closing opens one. The scan reads its
// text through a window that grows as far as it needs, so a note can be scanned again from anywhere (reparse).

// A stretch of the text from `base`, read with `slice(from, to)` and grown on demand up to `length`.
class Window {
  constructor(slice, length, from, to) {
    this.slice = slice;
    this.length = length;
    this.base = from;
    this.text = slice(from, Math.min(Math.max(from, to), length));
  }

  get end() {
    return this.base + this.text.length;
  }

  /** Read on (at least a few KB more, doubling); false at the end of the text. */
  grow() {
    if (this.end >= this.length) return false;
    this.text += this.slice(this.end, Math.min(this.length, this.end + Math.max(4096, this.text.length)));
    return true;
  }
}

/** Where the first opening delimiter at or after `pos` starts (-1: none), looking only before `limit` if given. */
function nextOpening(win, pos, limit = Infinity) {
  if (limit < Infinity) {
    // Only the text up to `limit` and the two characters an opening started before it reaches into.
    while (win.end < limit + 2 && win.grow());
    OPENING.lastIndex = pos - win.base;
    const found = OPENING.exec(win.text);
    return found && found.index + win.base < limit ? found.index + win.base : -1;
  }
  for (;;) {
    OPENING.lastIndex = pos - win.base;
    const found = OPENING.exec(win.text);
    if (found) return found.index + win.base;
    const again = Math.max(pos, win.end - 2);
    if (!win.grow()) return -1;
    pos = again;
  }
}

/** Where the first `closing` at or after `from` starts (-1: none). */
function closingFrom(win, closing, from) {
  for (;;) {
    const at = win.text.indexOf(closing, from - win.base);
    if (at >= 0) return at + win.base;
    const again = Math.max(from, win.end - 2);
    if (!win.grow()) return -1;
    from = again;
  }
}

/**
 * Scan `win` from `pos` into `out` ({marks, fails, unclosed}): marks; failed substitutions (no separator:
 * {from, to, noSeparatorBefore}); for each delimiter that found no closing, where the first such opening is.
 * `unclosable`: delimiters known to have no closing after `pos`. `resync(pos)` (reparse) names the first place
 * at or after `pos` where the scan may stop if it finds no opening before it. Returns the position stopped at
 * (the text's length at its end).
 */
function scan(win, pos, unclosable, out, resync = null) {
  let noSeparatorBefore = -1;
  for (;;) {
    let start;
    if (resync) {
      const stop = resync(pos);
      start = nextOpening(win, pos, stop);
      if (start < 0 && noSeparatorBefore <= stop) return stop;
      if (start < 0) start = nextOpening(win, pos);
    } else start = nextOpening(win, pos);
    if (start < 0) return win.length;
    const delimiter = win.text.substr(start - win.base, WIDTH);
    pos = start + 1;
    if (unclosable.has(delimiter) || (delimiter === "{~~" && start < noSeparatorBefore)) continue;
    const [kind, closing] = CLOSING[delimiter];
    const bodyStart = start + WIDTH;
    const bodyEnd = closingFrom(win, closing, bodyStart);
    if (bodyEnd < 0) {
      unclosable.add(delimiter);
      if (!out.unclosed.has(delimiter)) out.unclosed.set(delimiter, start);
      continue;
    }
    const body = win.text.slice(bodyStart - win.base, bodyEnd - win.base);
    const [metadata, skip] = splitMetadata(body);
    const contentFrom = bodyStart + skip;
    let sepAt = -1;
    if (kind === "substitution") {
      const separator = body.indexOf("~>", skip);
      if (separator < 0) {
        noSeparatorBefore = bodyEnd;
        out.fails.push({ from: start, to: bodyEnd + WIDTH, noSeparatorBefore: bodyEnd });
        continue;
      }
      sepAt = bodyStart + separator;
    }
    out.marks.push({ kind, from: start, to: bodyEnd + WIDTH, contentFrom, contentTo: bodyEnd, metadata, sepAt });
    pos = bodyEnd + WIDTH;
  }
}

/** The whole scan of `text`: {marks, fails, unclosed}, what reparse starts from. */
export function parseText(text) {
  const out = { marks: [], fails: [], unclosed: new Map() };
  scan(new Window((from, to) => text.slice(from, to), text.length, 0, text.length), 0, new Set(), out);
  return out;
}

/** Every mark of `text`, in order: {kind, from, to, contentFrom, contentTo, metaFrom, metadata, sepAt}. */
export function parseMarks(text) {
  return parseText(text).marks;
}

/** The index of the first of `items` (sorted by `from`, apart) whose `to` is after `position`. */
function firstEndingAfter(items, position) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid].to > position) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The index of the first of `items` (sorted by `from`) that starts at or after `position`. */
function firstFrom(items, position) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid].from >= position) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The mark or failed substitution of `parse` that spans `position` (starts before it, ends after it). */
function spanning(parse, position) {
  const mark = parse.marks[firstEndingAfter(parse.marks, position)];
  if (mark && mark.from < position) return mark;
  // Failed substitutions are rare (hand-typed "{~~" without "~>"): a look at each.
  return parse.fails.find((fail) => fail.from < position && position < fail.to) || null;
}

export function shiftMark(mark, delta) {
  return {
    ...mark,
    from: mark.from + delta,
    to: mark.to + delta,
    contentFrom: mark.contentFrom + delta,
    contentTo: mark.contentTo + delta,
    sepAt: mark.sepAt < 0 ? -1 : mark.sepAt + delta,
  };
}

/**
 * The scan of a text after one change, from `old` (the scan before it): only the stretch the change can
 * affect is scanned again. The text from `fromA` to `toA` (before) became `fromB` to `toB` (after, read with
 * `slice(from, to)`, `length` long); several changes are given as one that spans them all.
 *
 * Marks cannot nest and a scan's state between marks is only its place (and a failed substitution's reach),
 * so: the scan starts again at the last place before the change that no mark or failed substitution spans
 * (two characters before it, or earlier: a delimiter may be formed across the change's edge), or where an
 * unclosed opening is when the change makes a closing of its kind; and it stops at the first place after
 * the change where both the new scan and the old one stand between marks: from there on, the old scan's
 * marks are the new ones, moved by the change's length.
 *
 * Returns {parse, kept, scanned, resumed, from, stop}: the new scan; how many of the old marks come first
 * unchanged; how many marks the new scan found; the index of the first old mark that follows them (moved);
 * where the new scan started and stopped (no mark spans either place, before or after the change).
 */
export function reparse(old, slice, length, { fromA, toA, fromB, toB }) {
  const delta = toB - fromB - (toA - fromA);
  const near = slice(Math.max(0, fromB - 2), Math.min(length, toB + 2));
  let from = Math.max(0, fromA - 2);
  for (const [delimiter, at] of old.unclosed) {
    if (at < from && near.includes(CLOSING[delimiter][1])) from = at;
  }
  for (let over = spanning(old, from); over; over = spanning(old, from)) from = over.from;
  const unclosable = new Set();
  for (const [delimiter, at] of old.unclosed) if (at < from) unclosable.add(delimiter);
  const out = { marks: [], fails: [], unclosed: new Map() };
  // The first place at or after `pos`, past the change, where the old scan stood between marks.
  const resync = (pos) => {
    let before = Math.max(pos, toB + 2) - delta;
    for (let over = spanning(old, before); over; over = spanning(old, before)) before = over.to;
    return Math.min(length, before + delta);
  };
  const stop = scan(new Window(slice, length, from, toB + 256), from, unclosable, out, resync);
  const stopBefore = stop - delta;
  const kept = firstFrom(old.marks, from);
  const resumed = firstFrom(old.marks, stopBefore);
  const marks = old.marks.slice(0, kept).concat(out.marks);
  for (let i = resumed; i < old.marks.length; i++) marks.push(shiftMark(old.marks[i], delta));
  const fails = old.fails.filter((f) => f.from < from).concat(out.fails);
  for (const f of old.fails) {
    if (f.from >= stopBefore) {
      fails.push({ from: f.from + delta, to: f.to + delta, noSeparatorBefore: f.noSeparatorBefore + delta });
    }
  }
  // Where an opening of each kind may stand with no closing after it: kept before the scan, found by it, or
  // moved after it; one the scan went past without finding it again still holds from where the scan stopped.
  const unclosed = new Map();
  const earliest = (delimiter, at) => {
    if (!unclosed.has(delimiter) || at < unclosed.get(delimiter)) unclosed.set(delimiter, at);
  };
  for (const [delimiter, at] of old.unclosed) {
    if (at < from) earliest(delimiter, at);
    else if (at >= stopBefore) earliest(delimiter, at + delta);
    else if (!out.unclosed.has(delimiter)) earliest(delimiter, stop);
  }
  for (const [delimiter, at] of out.unclosed) earliest(delimiter, at);
  return { parse: { marks, fails, unclosed }, kept, scanned: out.marks.length, resumed, from, stop };
}

/** Marks grouped into reviewable changes: adjacent marks with the same suggestion id form one. */
export function groupChanges(marks, text) {
  return groupMarks(marks, (from, to) => text.slice(from, to));
}

/** groupChanges, reading the text with `slice(from, to)`. Whether a mark joins the change before it depends
 * on that change's last mark and the text between them only: a part of the marks can be grouped again alone. */
export function groupMarks(marks, slice) {
  const changes = [];
  for (const mark of marks) {
    const id = mark.metadata && typeof mark.metadata.id === "string" ? mark.metadata.id : null;
    const last = changes[changes.length - 1];
    if (last && id && last.id === id && slice(last.to, mark.from).trim() === "") {
      last.marks.push(mark);
      last.to = mark.to;
      continue;
    }
    changes.push({ id, from: mark.from, to: mark.to, marks: [mark], metadata: mark.metadata });
  }
  for (const change of changes) {
    change.deleted = change.marks
      .filter((m) => m.kind === "deletion" || m.kind === "substitution")
      .map((m) => slice(m.contentFrom, m.kind === "substitution" ? m.sepAt : m.contentTo))
      .join("");
    change.inserted = change.marks
      .filter((m) => m.kind === "addition" || m.kind === "substitution")
      .map((m) => slice(m.kind === "substitution" ? m.sepAt + 2 : m.contentFrom, m.contentTo))
      .join("");
  }
  return changes;
}

/** "3 hours ago" from a millisecond timestamp. */
export function ageOf(timestamp, now = Date.now()) {
  if (typeof timestamp !== "number") return "";
  const seconds = Math.max(0, (now - timestamp) / 1000);
  const units = [
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
  ];
  for (const [name, size] of units) {
    const n = Math.floor(seconds / size);
    if (n >= 1) return `${n} ${name}${n > 1 ? "s" : ""} ago`;
  }
  return "just now";
}
