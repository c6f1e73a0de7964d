// The tracked changes in the editor: the note's CriticMarkup (editor/src/critic.js) drawn as insertions and
// deletions with their author, Accept / Reject inline, comments and thread badges; the metadata hidden.
//
// Kept up to date per keystroke without reading the whole note (issue 32: with 500 suggestions in 5,000 lines,
// building it all again cost 3-7 ms a key, 20-70 ms at the 99th percentile): the note is scanned again only
// around the change (critic.js's reparse), the marks beside it grouped again, and only those changes'
// decorations made again; the rest of the decorations are moved with the change (RangeSet.map), so
// CodeMirror compares and redraws only what changed. A change's decorations are its own objects, so they
// can be taken out by identity. What else a change's look depends on (whether it is stale, its thread's
// badge) is looked at again only when the changes it depends on are touched. editor/test/tracked.test.js
// holds all this to a rebuild from scratch.

import { StateField, StateEffect } from "@codemirror/state";
import { EditorView, Decoration, WidgetType } from "@codemirror/view";
import { parseText, reparse, groupMarks, shiftMark, ageOf } from "./critic.js";
import { threadIdOf } from "./threads.js";

// As NOTE_MAX_CHARS in suggestions/review/review_page.py (the server cuts a longer note too).
const NOTE_MAX_CHARS = 2000;
export const setView = StateEffect.define();
export const setPending = StateEffect.define();

class AuthorWidget extends WidgetType {
  constructor(author, age, stamp) {
    super();
    this.author = author;
    this.age = age;
    this.stamp = stamp;
  }
  eq(other) {
    return other.author === this.author && other.age === this.age;
  }
  toDOM() {
    const span = document.createElement("span");
    span.className = "lr-author";
    span.textContent = this.author;
    span.title = `${this.author} · ${this.age}${this.stamp ? ` · ${new Date(this.stamp).toISOString()}` : ""}`;
    return span;
  }
}

class NoteWidget extends WidgetType {
  constructor(text) {
    super();
    this.text = text;
  }
  eq(other) {
    return other.text === this.text;
  }
  toDOM() {
    const span = document.createElement("span");
    span.className = "lr-comment";
    span.textContent = this.text;
    span.title = "comment";
    return span;
  }
}

// A thread's comments show as one badge after its passage (the Comments panel shows them in full).
class ThreadBadgeWidget extends WidgetType {
  constructor(thread, count, resolved) {
    super();
    this.thread = thread;
    this.count = count;
    this.resolved = resolved;
  }
  eq(other) {
    return other.thread === this.thread && other.count === this.count && other.resolved === this.resolved;
  }
  toDOM() {
    const button = document.createElement("button");
    button.type = "button";
    button.className = `lr-thread-badge${this.resolved ? " lr-thread-badge-resolved" : ""}`;
    button.dataset.thread = this.thread;
    button.textContent = `💬 ${this.count}`;
    const state = this.resolved ? "resolved thread" : "thread";
    button.title = `${this.count} comment${this.count === 1 ? "" : "s"} (${state}): open it in Comments`;
    button.setAttribute("aria-label", `Comment ${state} with ${this.count} comment${this.count === 1 ? "" : "s"}`);
    return button;
  }
  ignoreEvent() {
    return true;
  }
}

class ActionsWidget extends WidgetType {
  constructor(id, stale, canReview) {
    super();
    this.id = id;
    this.stale = stale;
    this.canReview = canReview;
  }
  eq(other) {
    return other.id === this.id && other.stale === this.stale && other.canReview === this.canReview;
  }
  toDOM() {
    const box = document.createElement("span");
    box.className = "lr-actions";
    box.dataset.suggestion = this.id;
    if (this.stale) {
      const badge = document.createElement("span");
      badge.className = "lr-stale";
      badge.textContent = "stale";
      badge.title = "A person typed inside this suggestion since it was proposed";
      box.append(badge);
    }
    if (this.canReview) {
      const choices = [
        ["accept", "✓", "Accept (Alt-A)"],
        ["reject", "✗", "Reject (Alt-R)"],
      ];
      // The optional note to the assistant travels with whichever choice is made next (button or key).
      const note = document.createElement("input");
      note.type = "text";
      note.className = "lr-note";
      note.maxLength = NOTE_MAX_CHARS;
      note.placeholder = "✎ note to the assistant";
      note.setAttribute("aria-label", `Note to the assistant for suggestion ${this.id} (optional)`);
      note.dataset.suggestion = this.id;
      box.append(note);
      // A stale suggestion cannot be applied as proposed: clean it up (the rule: docs/review.md).
      if (this.stale) choices.push(["clean_up", "clean up", "Keep what people typed inside it, reject the rest"]);
      for (const [decision, label, title] of choices) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `lr-${decision}`;
        button.textContent = label;
        button.title = title;
        button.setAttribute("aria-label", `${title.split(" (")[0]} suggestion ${this.id}`);
        button.dataset.decision = decision;
        button.dataset.suggestion = this.id;
        box.append(button);
      }
    }
    return box;
  }
  ignoreEvent() {
    return true;
  }
}

/** Whether `change` holds a thread's comment or passage (a suggestion's discussion is part of it instead). */
function holdsThread(change) {
  return !change.id && change.marks.some((m) => (m.kind === "comment" || m.kind === "highlight") && threadIdOf(m));
}

/** The comment threads on passages among `changes`: id -> where its first comment mark starts, how many
 * comments, and whether it is resolved (its first comment says so). */
function threadsIn(changes) {
  const threads = new Map();
  for (const change of changes) {
    if (change.id) continue;
    for (const mark of change.marks) {
      const id = mark.kind === "comment" ? threadIdOf(mark) : null;
      if (!id) continue;
      const found = threads.get(id);
      const comment = mark.metadata.comment;
      if (!found) threads.set(id, { first: mark.from, comments: new Set([comment]), resolved: mark.metadata.resolved === true });
      else found.comments.add(comment);
    }
  }
  return threads;
}

const sameThread = (a, b) => Boolean(a && b) && a.first === b.first && a.comments.size === b.comments.size && a.resolved === b.resolved;

/** Whether a suggestion is stale: its pending row (the `index`-th change with its id takes the row's
 * `index`-th hunk) no longer says what the text holds. */
function staleOf(change, index, pending) {
  const row = change.id ? pending.get(change.id) : undefined;
  if (!row) return false;
  const hunk = row.hunks[index];
  return row.status === "stale" || !hunk || hunk.old !== change.deleted || hunk.new !== change.inserted;
}

/** The decorations of one change, pushed on `ranges`; its own decoration objects are kept in change.decos. */
function decorate(change, { view, canReview, threads, slice }, ranges) {
  const meta = change.metadata || {};
  const hidden = Decoration.replace({});
  const decos = [hidden];
  // An empty range is drawn only for a widget (an empty comment's), as an inclusive replacement: CodeMirror
  // refuses an empty one that is not, and drops it when it maps it.
  const add = (from, to, deco) => {
    if (to < from || (to === from && !(deco.point && deco.spec.widget))) return;
    if (to === from && deco.startSide > 0) deco = Decoration.replace({ widget: deco.spec.widget, inclusive: true });
    if (deco !== hidden) decos.push(deco);
    ranges.push(deco.range(from, to));
  };
  const cls = change.stale ? " lr-is-stale" : "";
  change.marks.forEach((mark, i) => {
    const thread = change.id ? null : threadIdOf(mark);
    if (thread && mark.kind === "comment") {
      const found = threads.get(thread);
      const badge = view === "suggestions" && found.first === mark.from;
      add(mark.from, mark.to, badge ? Decoration.replace({ widget: new ThreadBadgeWidget(thread, found.comments.size, found.resolved) }) : hidden);
      return;
    }
    const opening = i === 0 && view === "suggestions" && meta.author
      ? Decoration.replace({ widget: new AuthorWidget(String(meta.author), ageOf(meta.timestamp), meta.timestamp) })
      : hidden;
    add(mark.from, mark.contentFrom, opening);
    const shown = (kind) => {
      if (view === "suggestions") return Decoration.mark({ class: `lr-${kind}${cls}`, attributes: { "data-suggestion": change.id || "" } });
      if ((view === "accepted") === (kind === "ins")) return null;
      return hidden;
    };
    if (mark.kind === "addition" || mark.kind === "deletion") {
      const deco = shown(mark.kind === "addition" ? "ins" : "del");
      if (deco) add(mark.contentFrom, mark.contentTo, deco);
    } else if (mark.kind === "substitution") {
      const old = shown("del");
      if (old) add(mark.contentFrom, mark.sepAt, old);
      add(mark.sepAt, mark.sepAt + 2, hidden);
      const neu = shown("ins");
      if (neu) add(mark.sepAt + 2, mark.contentTo, neu);
    } else if (mark.kind === "comment") {
      const note = slice(mark.contentFrom, mark.contentTo);
      add(mark.contentFrom, mark.contentTo, view === "suggestions" ? Decoration.replace({ widget: new NoteWidget(note) }) : hidden);
    } else if (mark.kind === "highlight" && view === "suggestions") {
      // A thread's passage is its anchor: marked as commented on (lighter once resolved).
      const found = thread && threads.get(thread);
      add(mark.contentFrom, mark.contentTo, thread
        ? Decoration.mark({
          class: `lr-hl lr-anchor${found && found.resolved ? " lr-anchor-resolved" : ""}`,
          attributes: { "data-thread": thread, title: "Commented on: see Comments" },
        })
        : Decoration.mark({ class: "lr-hl" }));
    }
    add(mark.contentTo, mark.to, hidden);
  });
  if (view === "suggestions" && change.id) {
    add(change.to, change.to, Decoration.widget({ widget: new ActionsWidget(change.id, change.stale, canReview), side: 1 }));
  }
  change.decos = decos;
}

/** Changes from marks, each with where its first mark is among them (`at`). */
function grouped(marks, offset, slice) {
  const changes = groupMarks(marks, slice);
  let at = offset;
  for (const change of changes) {
    change.at = at;
    at += change.marks.length;
  }
  return changes;
}

/** Everything from the text: {view, pending, parse, marks, changes, threads, decorations}. */
export function buildTracked(state, view, pending, canReview) {
  const text = state.doc.toString();
  const slice = (from, to) => text.slice(from, to);
  const parse = parseText(text);
  const changes = grouped(parse.marks, 0, slice);
  const seen = new Map();
  for (const change of changes) {
    if (!change.id) continue;
    const index = seen.get(change.id) || 0;
    seen.set(change.id, index + 1);
    change.stale = staleOf(change, index, pending);
  }
  const threads = threadsIn(changes);
  const ranges = [];
  const context = { view, canReview, threads, slice };
  for (const change of changes) decorate(change, context, ranges);
  return { view, pending, parse, marks: parse.marks, changes, threads, decorations: Decoration.set(ranges, true) };
}

/** The index of the change (sorted, apart) holding the mark that starts at `position`. */
function changeAt(changes, position) {
  let lo = 0;
  let hi = changes.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (changes[mid].from <= position) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** `value` after a transaction that changed the text only (no view or pending rows given). */
export function updateTracked(value, tr, canReview) {
  let fromA = Infinity;
  let toA = -1;
  let fromB = Infinity;
  let toB = -1;
  tr.changes.iterChangedRanges((fa, ta, fb, tb) => {
    fromA = Math.min(fromA, fa);
    toA = Math.max(toA, ta);
    fromB = Math.min(fromB, fb);
    toB = Math.max(toB, tb);
  });
  const doc = tr.state.doc;
  const slice = (from, to) => doc.sliceString(from, to);
  const delta = toB - fromB - (toA - fromA);
  const { parse, kept, scanned, resumed } = reparse(value.parse, slice, doc.length, { fromA, toA, fromB, toB });
  const { marks } = parse;
  const old = value.changes;
  // The changes to group again: from the one holding the last mark kept before the scan to the one holding
  // the first mark after it (the text between them may have changed: whether they join, too).
  const first = kept > 0 ? changeAt(old, value.marks[kept - 1].from) : 0;
  const last = resumed < value.marks.length ? changeAt(old, value.marks[resumed].from) : old.length - 1;
  const from = first < old.length && kept > 0 ? old[first].at : 0;
  const shift = scanned - (resumed - kept);
  const to = last >= 0 && resumed < value.marks.length ? old[last].at + old[last].marks.length + shift : marks.length;
  const removed = old.slice(first, last + 1);
  const added = grouped(marks.slice(from, to), from, slice);
  const changes = old.slice(0, first).concat(added);
  for (let i = last + 1; i < old.length; i++) {
    const change = old[i];
    const at = change.at + shift;
    changes.push({ ...change, from: change.from + delta, to: change.to + delta, at, marks: marks.slice(at, at + change.marks.length) });
  }
  // What the other changes' look depends on: the pending rows of the same ids (their order), the threads.
  const redo = new Set(added);
  const dropped = []; // changes outside the window to draw again (where they are now)
  const ids = new Set([...removed, ...added].map((c) => c.id).filter(Boolean));
  if (ids.size) {
    const seen = new Map();
    changes.forEach((change, i) => {
      if (!ids.has(change.id)) return;
      const index = seen.get(change.id) || 0;
      seen.set(change.id, index + 1);
      const stale = staleOf(change, index, value.pending);
      if (redo.has(change)) change.stale = stale;
      else if (stale !== change.stale) {
        dropped.push(change);
        changes[i] = { ...change, stale };
        redo.add(changes[i]);
      }
    });
  }
  let threads;
  if (removed.some(holdsThread) || added.some(holdsThread)) {
    threads = threadsIn(changes);
    const before = new Map();
    for (const [id, thread] of value.threads) before.set(id, { ...thread, first: tr.changes.mapPos(thread.first, 1) });
    const differ = new Set([...before.keys(), ...threads.keys()].filter((id) => !sameThread(before.get(id), threads.get(id))));
    if (differ.size) {
      changes.forEach((change, i) => {
        if (redo.has(change) || change.id || !change.marks.some((m) => differ.has(threadIdOf(m)))) return;
        dropped.push(change);
        changes[i] = { ...change };
        redo.add(changes[i]);
      });
    }
  } else if (value.threads.size) {
    threads = new Map();
    for (const [id, thread] of value.threads) threads.set(id, { ...thread, first: tr.changes.mapPos(thread.first, 1) });
  } else threads = value.threads;
  // Their decorations out (by identity, where they were moved to), the new ones in; the rest only moved.
  const gone = new Set();
  let filterFrom = doc.length;
  let filterTo = 0;
  for (const change of removed) {
    for (const deco of change.decos) gone.add(deco);
    filterFrom = Math.min(filterFrom, tr.changes.mapPos(change.from, -1));
    filterTo = Math.max(filterTo, tr.changes.mapPos(change.to, 1));
  }
  for (const change of dropped) {
    for (const deco of change.decos) gone.add(deco);
    filterFrom = Math.min(filterFrom, change.from);
    filterTo = Math.max(filterTo, change.to);
  }
  const ranges = [];
  const context = { view: value.view, canReview, threads, slice };
  for (const change of redo) decorate(change, context, ranges);
  let decorations = value.decorations.map(tr.changes);
  if (gone.size || ranges.length) {
    decorations = decorations.update({
      add: ranges,
      sort: true,
      filter: gone.size ? (_from, _to, deco) => !gone.has(deco) : undefined,
      filterFrom: Math.max(0, filterFrom),
      filterTo: Math.min(doc.length, filterTo),
    });
  }
  return { view: value.view, pending: value.pending, parse, marks, changes, threads, decorations };
}

/** The tracked changes of a note: a field holding {view, pending, marks, changes, decorations}. */
export function trackedChanges(canReview) {
  return StateField.define({
    create(state) {
      return buildTracked(state, "suggestions", new Map(), canReview);
    },
    update(value, tr) {
      let { view, pending } = value;
      let given = false;
      for (const effect of tr.effects) {
        if (effect.is(setView)) (view = effect.value), (given = true);
        if (effect.is(setPending)) (pending = effect.value), (given = true);
      }
      if (given) return buildTracked(tr.state, view, pending, canReview);
      if (!tr.docChanged) return value;
      return updateTracked(value, tr, canReview);
    },
    provide: (field) => [
      EditorView.decorations.from(field, (value) => value.decorations),
      EditorView.atomicRanges.of((view) => view.state.field(field).decorations),
    ],
  });
}
