// Suggesting mode: what a person types or deletes becomes CriticMarkup under their own name instead of
// changing the note. The rule is the server's (suggestions/markup/suggesting.py), checked here before
// anything is sent: only the person's own marks change, the note without suggestions reads the same.
//
// Typing outside a suggestion writes {++…++}; typing inside or at the edge of one's own insertion extends
// it; deleting plain text wraps it in {--…--} (extending one's own deletion next to it); deleting inside
// one's own insertion really deletes. Typing over a selection is one suggestion: {--old--}{++new++}.
// Another author's suggestion is never changed: decide it, or type beside it.

import { parseMarks, reparse } from "./critic.js";

const FORBIDDEN_IN_METADATA = /\{\+\+|\+\+\}|\{--|--\}|\{~~|~>|~~\}|\{==|==\}|\{>>|<<\}|@@/;

/** A JSON string that no delimiter can form in, as the server writes one (criticmarkup._escaped_json_string). */
export function escapedJson(value) {
  let encoded = JSON.stringify(value);
  let found;
  while ((found = FORBIDDEN_IN_METADATA.exec(encoded)) !== null) {
    const last = found.index + found[0].length - 1;
    encoded = `${encoded.slice(0, last)}\\u${encoded.charCodeAt(last).toString(16).padStart(4, "0")}${encoded.slice(last + 1)}`;
  }
  return encoded;
}

export function metadataFor(me, id, now = Date.now()) {
  return `{"author":${escapedJson(me.name)},"timestamp":${now},"id":"${id}","user":${me.id}}@@`;
}

export function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function markUser(mark) {
  const user = mark.metadata ? mark.metadata.user : undefined;
  return Number.isInteger(user) ? user : null;
}

const markId = (mark) => (mark.metadata && typeof mark.metadata.id === "string" ? mark.metadata.id : null);

/** The note with every suggestion rejected. */
export function originalText(text, marks) {
  let out = "";
  let position = 0;
  for (const mark of marks) {
    out += text.slice(position, mark.from);
    if (mark.kind === "deletion" || mark.kind === "highlight") out += text.slice(mark.contentFrom, mark.contentTo);
    else if (mark.kind === "substitution") out += text.slice(mark.contentFrom, mark.sepAt);
    position = mark.to;
  }
  return out + text.slice(position);
}

/** Why going from `before` to `after` is more than `me`'s own suggesting (null: it is not). */
export function suggestingRefusal(before, after, me) {
  const marksBefore = parseMarks(before);
  const marksAfter = parseMarks(after);
  return refusalOf(me, {
    slice: (a, b) => before.slice(a, b),
    sliceAfter: (a, b) => after.slice(a, b),
    marksAfter,
    windowBefore: marksBefore,
    windowAfter: marksAfter,
    originals: () => [originalText(before, marksBefore), originalText(after, marksAfter)],
  });
}

/**
 * suggestingRefusal for `edits` (sorted, apart) made to `before`, whose scan is `parse` (critic.js's parseText,
 * as the editor keeps it): the note is scanned again only around the edits (reparse) and only that stretch is
 * compared. Outside it both texts and their marks are the same (moved), and no mark spans its ends, so the
 * marks of others and the note without suggestions are the same outside it too: the verdict is the same.
 */
export function suggestingRefusalAround(before, after, parse, edits, me) {
  const fromA = edits[0].from;
  const toA = edits[edits.length - 1].to;
  const delta = after.length - before.length;
  // `after` read without making it one string (300 KB copied per keystroke in a big note): its changed
  // stretch, between the text before and after it.
  const middle = applyEdits(before.slice(fromA, toA), edits.map((e) => ({ ...e, from: e.from - fromA, to: e.to - fromA })));
  const end = fromA + middle.length;
  const sliceAfter = (a, b) => {
    if (b <= fromA) return before.slice(a, b);
    if (a >= end) return before.slice(a - delta, b - delta);
    return (a < fromA ? before.slice(a, fromA) : "") + middle.slice(Math.max(0, a - fromA), Math.min(middle.length, b - fromA))
      + (b > end ? before.slice(end - delta, b - delta) : "");
  };
  const found = reparse(parse, sliceAfter, after.length, { fromA, toA, fromB: fromA, toB: end });
  const { kept, scanned, resumed, from, stop } = found;
  const windowBefore = parse.marks.slice(kept, resumed);
  const windowAfter = found.parse.marks.slice(kept, kept + scanned);
  return refusalOf(me, {
    slice: (a, b) => before.slice(a, b),
    sliceAfter,
    marksAfter: found.parse.marks,
    windowBefore,
    windowAfter,
    originals: () => [originalBetween(before, windowBefore, from, stop - delta), originalBetween(sliceAfter, windowAfter, from, stop)],
  });
}

/** originalText of the stretch [from, to) of `text` (a string, or read with a function), which `marks` (those
 * in it) do not cross. */
function originalBetween(text, marks, from, to) {
  if (typeof text === "string") return originalBetween((a, b) => text.slice(a, b), marks, from, to);
  const slice = text;
  let out = "";
  let position = from;
  for (const mark of marks) {
    out += slice(position, mark.from);
    if (mark.kind === "deletion" || mark.kind === "highlight") out += slice(mark.contentFrom, mark.contentTo);
    else if (mark.kind === "substitution") out += slice(mark.contentFrom, mark.sepAt);
    position = mark.to;
  }
  return out + slice(position, to);
}

/** The rule, read from the marks compared (`window*`: all, or the stretch outside which nothing differs). */
function refusalOf(me, { slice, sliceAfter, marksAfter, windowBefore, windowAfter, originals }) {
  const theirs = (read, marks) => marks.filter((m) => markUser(m) !== me.id).map((m) => read(m.from, m.to));
  const a = theirs(slice, windowBefore);
  const b = theirs(sliceAfter, windowAfter);
  if (a.length !== b.length || a.some((value, i) => value !== b[i])) {
    return "someone else's suggestion or comment cannot be changed here: decide it or suggest beside it";
  }
  const othersIds = new Set(marksAfter.filter((m) => markUser(m) !== me.id).map(markId));
  for (const mark of marksAfter) {
    if (markUser(mark) !== me.id) continue;
    if (!["addition", "deletion", "comment"].includes(mark.kind)) return "a suggestion is typed as an insertion or a deletion";
    if (mark.metadata.author !== me.name) return "a suggestion must name you as its author";
    const id = markId(mark);
    if (!id || !/^[0-9a-f]{16}$/.test(id)) return "a suggestion needs an id of 16 hex digits";
    if (othersIds.has(id)) return "a suggestion's id must be its own";
  }
  const [original, originalAfter] = originals();
  if (original !== originalAfter) {
    return "the text itself cannot be changed: typing and deleting must become suggestions";
  }
  return null;
}

function applyEdits(text, edits) {
  let out = "";
  let position = 0;
  for (const edit of edits) {
    out += text.slice(position, edit.from) + edit.insert;
    position = edit.to;
  }
  return out + text.slice(position);
}

/** Where a start-document position lands once `edits` (sorted, apart) are made; `after`: past an insertion there. */
function mapped(edits, position, after) {
  let shift = 0;
  for (const edit of edits) {
    if (edit.to < position || (edit.to === position && (after || edit.from < edit.to))) {
      shift += edit.insert.length - (edit.to - edit.from);
    } else if (edit.from < position) return edit.from + shift;
  }
  return position + shift;
}

// Every character a delimiter (or the metadata separator) is made of.
const DELIMITER_CHARS = /[{}+\-~=<>@]/;

function ownContent(marks, edit, me) {
  return marks.some((m) => markUser(m) === me.id && m.kind === "addition" && m.contentFrom < edit.from && edit.to <= m.contentTo);
}

/**
 * One change of `text` (delete [from, to), insert `inserted` there) made as `me`'s suggestion.
 * Returns {edits, cursor} (edits sorted, in `text` positions) or {refusal}. `parse`: the scan of `text`
 * (critic.js's parseText), when the caller keeps it already (the editor does, per keystroke: tracked.js), so
 * that neither the marks nor the rule need the whole note read again.
 */
export function suggest(text, from, to, inserted, me, { forward = false, makeId = newId, now = Date.now(), parse = null } = {}) {
  const marks = parse ? parse.marks : parseMarks(text);
  const own = (m) => markUser(m) === me.id;
  const edits = [];
  let id = null;
  // -- the deleted range, piece by piece -------------------------------------------------------------------
  let position = from;
  const plain = (a, b) => {
    if (b <= a) return;
    const before = marks.find((m) => own(m) && m.kind === "deletion" && m.to === a);
    const after = marks.find((m) => own(m) && m.kind === "deletion" && m.from === b);
    const piece = text.slice(a, b);
    if (before) {
      edits.push({ from: before.contentTo, to: before.contentTo, insert: piece }, { from: a, to: b, insert: "" });
      id = id || markId(before);
    } else if (after) {
      edits.push({ from: a, to: b, insert: "" }, { from: after.contentFrom, to: after.contentFrom, insert: piece });
      id = id || markId(after);
    } else {
      id = id || makeId();
      edits.push({ from: a, to: b, insert: `{--${metadataFor(me, id, now)}${piece}--}` });
    }
  };
  for (const mark of marks) {
    if (mark.to <= from || mark.from >= to) continue;
    plain(position, Math.max(position, mark.from));
    const whole = from <= mark.from && mark.to <= to;
    if (!own(mark)) {
      if (whole || (from < mark.contentTo && to > mark.contentFrom)) {
        return { refusal: `${mark.metadata && mark.metadata.author ? `${mark.metadata.author}'s` : "Another"} suggestion is in the way: decide it, or suggest beside it` };
      }
    } else if (whole && mark.kind !== "deletion") {
      edits.push({ from: mark.from, to: mark.to, insert: "" });
    } else if (mark.kind === "addition") {
      const a = Math.max(from, mark.contentFrom);
      const b = Math.min(to, mark.contentTo);
      if (b > a) edits.push({ from: a, to: b, insert: "" });
    }
    position = Math.min(to, mark.to);
  }
  plain(position, to);
  // -- the inserted text, right after what was deleted ---------------------------------------------------
  let cursorAt = null;
  if (inserted) {
    let at = to;
    const inside = marks.find((m) => m.from < at && at < m.to);
    if (inside && !own(inside)) return { refusal: "Another author's suggestion is here: decide it, or type beside it" };
    if (inside && inside.kind === "deletion") at = inside.to;
    const extend = marks.find((m) => own(m) && m.kind === "addition" && m.contentFrom <= at && at <= m.to);
    const next = marks.find((m) => own(m) && m.kind === "addition" && m.from === at);
    if (extend || next) {
      const point = extend ? Math.min(at, extend.contentTo) : next.contentFrom;
      edits.push({ from: point, to: point, insert: inserted, cursor: inserted.length });
    } else {
      const before = marks.find((m) => own(m) && m.kind === "deletion" && m.to === at);
      id = id || (before && markId(before)) || makeId();
      const opening = `{++${metadataFor(me, id, now)}`;
      edits.push({ from: at, to: at, insert: `${opening}${inserted}++}`, cursor: opening.length + inserted.length });
    }
  }
  edits.sort((a, b) => a.from - b.from || a.to - b.to);
  // Touching edits become one: CodeMirror takes apart changes only.
  const merged = [];
  for (const edit of edits) {
    const last = merged[merged.length - 1];
    if (last && edit.from <= last.to) {
      if (edit.cursor !== undefined) last.cursor = last.insert.length + edit.cursor;
      last.insert += edit.insert;
      last.to = Math.max(last.to, edit.to);
    } else merged.push({ ...edit });
  }
  for (const edit of merged) {
    if (edit.cursor !== undefined) cursorAt = mapped(merged, edit.from, false) + edit.cursor;
  }
  const after = applyEdits(text, merged);
  // Typing or deleting inside one's own insertion cannot change any mark but that one when no delimiter
  // character is typed or deleted and none stands on both sides of the place (a delimiter made or broken
  // there would need one on each side): the rule holds without reading the note twice more.
  const quiet = (piece) => !DELIMITER_CHARS.test(piece);
  const only = merged[0];
  const typedOn = merged.length === 1 && ownContent(marks, only, me) && quiet(only.insert)
    && quiet(text.slice(only.from, only.to)) && (quiet(text.charAt(only.from - 1)) || quiet(text.charAt(only.to)));
  let refusal = null;
  if (!typedOn) {
    refusal = parse && merged.length ? suggestingRefusalAround(text, after, parse, merged, me) : suggestingRefusal(text, after, me);
  }
  if (refusal) return { refusal };
  const cursor = cursorAt !== null ? cursorAt : mapped(merged, forward ? to : from, forward);
  return { edits: merged.map(({ from: f, to: t, insert }) => ({ from: f, to: t, insert })), cursor, after };
}

/**
 * Several changes of `text` at once (Replace all), each made as `me`'s suggestion: `pieces` ({from, to,
 * inserted}, in `text` positions, apart) are made last first, each in the text the later ones left, so that
 * every suggestion is checked by the rule like a keystroke. Returns {steps, cursor, after}, `steps` the
 * edits of each in turn (each in the positions of the text before it), or the first {refusal}.
 */
export function suggestEach(text, pieces, me, options = {}) {
  const steps = [];
  let current = text;
  let cursor = 0;
  for (const piece of [...pieces].sort((a, b) => b.from - a.from)) {
    let { from, to } = piece;
    // The later ones' marks start at or after `to`: what they insert there stays after this piece.
    for (const edits of steps) (from = mapped(edits, from, false)), (to = mapped(edits, to, false));
    const made = suggest(current, from, to, piece.inserted, me, { ...options, parse: null });
    if (made.refusal) return { refusal: made.refusal };
    steps.push(made.edits);
    current = made.after;
    cursor = made.cursor;
  }
  return { steps, cursor, after: current };
}
