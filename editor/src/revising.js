// A reviewer typing inside another author's pending insertion revises the proposal instead of editing the
// note: the keystroke never reaches the shared text (where it would make the suggestion stale for everyone),
// it opens a box holding the inserted text with that keystroke applied. The reviewer goes on typing there and
// accepts with changes in one decision, the same decision as the review page's card field
// (suggestions/lifecycle/deciding.py: the row keeps the proposed and the accepted text, undo restores the
// proposal). Anyone else typing inside still edits the note and makes the suggestion stale.

import { EditorState } from "@codemirror/state";
import { ySyncAnnotation } from "y-codemirror.next";

/** The inserted side of `mark` as [from, to], or null for a mark that inserts nothing. */
function insertedSpan(mark) {
  if (mark.kind === "addition") return [mark.contentFrom, mark.contentTo];
  if (mark.kind === "substitution" && mark.sepAt >= 0) return [mark.sepAt + 2, mark.contentTo];
  return null;
}

/**
 * Where `edits` ({from, to, inserted}, positions before them, ascending) revise one suggestion: all of them
 * inside the inserted text of one mark of a change with an id whose author is not `userId`. Returns
 * {change, mark, span} or null (an edit elsewhere, across a delimiter, or in one's own suggestion).
 */
export function insertionAround(changes, edits, userId) {
  if (!edits.length) return null;
  const first = edits[0];
  const last = edits[edits.length - 1];
  for (const change of changes) {
    if (change.from > first.from) break;
    if (!change.id || last.to > change.to) continue;
    if (change.metadata && change.metadata.user === userId && userId !== undefined && userId !== null) return null;
    for (const mark of change.marks) {
      const span = insertedSpan(mark);
      if (span && span[0] <= first.from && last.to <= span[1]) return { change, mark, span };
    }
  }
  return null;
}

/**
 * The revision a keystroke starts: which part of the suggestion (`index`, its order among the changes of the
 * same id, as the row's hunks are ordered), the part's inserted text with `edits` applied, and the caret in it.
 */
export function revisionDraft(changes, around, edits, slice) {
  const { change, mark, span } = around;
  const index = changes.filter((c) => c.id === change.id && c.from < change.from).length;
  let before = "";
  let after = "";
  let seen = false;
  for (const other of change.marks) {
    const part = insertedSpan(other);
    if (!part) continue;
    if (other === mark) seen = true;
    else if (seen) after += slice(part[0], part[1]);
    else before += slice(part[0], part[1]);
  }
  let text = slice(span[0], span[1]);
  for (const edit of [...edits].reverse()) {
    const at = edit.from - span[0];
    text = text.slice(0, at) + edit.inserted + text.slice(edit.to - span[0]);
  }
  const lastEdit = edits[edits.length - 1];
  const caret = before.length + lastEdit.from - span[0] + lastEdit.inserted.length;
  return { index, text: before + text + after, caret };
}

/** The transaction filter: a reviewer's keystroke inside another's pending insertion opens the box. */
export function revisingFilter(page, reviser) {
  return EditorState.transactionFilter.of((tr) => {
    if (page.suggesting || !page.config.canReview || !tr.docChanged || tr.annotation(ySyncAnnotation)) return tr;
    if (!(tr.isUserEvent("input") || tr.isUserEvent("delete"))) return tr;
    const edits = [];
    tr.changes.iterChanges((from, to, _fromB, _toB, inserted) => edits.push({ from, to, inserted: inserted.toString() }));
    const tracked = tr.startState.field(page.field);
    const around = insertionAround(tracked.changes, edits, page.config.userId);
    if (!around || around.change.stale) return tr;
    const row = reviser.review.pending.get(around.change.id);
    if (!row || row.status !== "pending") return tr;
    const doc = tr.startState.doc;
    const draft = revisionDraft(tracked.changes, around, edits, (from, to) => doc.sliceString(from, to));
    // After this transaction is dropped: opening the box moves the focus, which must not happen mid-update.
    queueMicrotask(() => reviser.open({ change: around.change, row, ...draft }));
    return [];
  });
}

/** The box a revision is typed in: the inserted text, a note for the author, Accept with changes, Cancel. */
export class Reviser {
  constructor(page, review) {
    this.page = page;
    this.review = review;
    this.box = null;
  }

  open({ change, row, index, text, caret }) {
    this.close();
    const { view } = this.page;
    const author = (change.metadata && change.metadata.author) || row.author || "the author";
    const box = document.createElement("div");
    box.className = "lr-revise";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", `Revise the suggestion of ${author}`);
    box.dataset.suggestion = change.id;
    const title = document.createElement("p");
    title.className = "lr-revise-title";
    title.textContent = `Revising ${author}'s suggestion: your changes are accepted in one decision.`;
    const field = document.createElement("textarea");
    field.className = "lr-revise-text";
    field.value = text;
    field.rows = Math.min(8, Math.max(2, text.split("\n").length + 1));
    field.setAttribute("aria-label", "The inserted text, as you change it");
    const note = document.createElement("input");
    note.type = "text";
    note.className = "lr-revise-note";
    note.placeholder = "✎ note to the author (optional)";
    note.setAttribute("aria-label", "Note to the author (optional)");
    const accept = document.createElement("button");
    accept.type = "button";
    accept.className = "lr-revise-accept";
    accept.textContent = "Accept with changes";
    accept.title = "Ctrl+Enter";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "lr-revise-cancel";
    cancel.textContent = "Cancel";
    cancel.title = "Escape: the proposal stays as it was";
    const hint = document.createElement("p");
    hint.className = "lr-revise-hint";
    hint.textContent = "Ctrl+Enter accepts · Esc cancels";
    box.append(title, field, note, accept, cancel, hint);

    const submit = () => this.accept(change.id, row, index, field.value, note.value.trim());
    accept.addEventListener("click", submit);
    cancel.addEventListener("click", () => this.cancel());
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        this.cancel();
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        submit();
      }
    });

    const at = view.coordsAtPos(change.from) || view.dom.getBoundingClientRect();
    box.style.top = `${Math.min(window.innerHeight - 220, Math.max(8, at.bottom + 6))}px`;
    box.style.left = `${Math.min(window.innerWidth - 380, Math.max(8, at.left))}px`;
    document.body.append(box);
    this.box = box;
    field.focus();
    field.setSelectionRange(caret, caret);
  }

  async accept(uid, row, index, text, note) {
    const revision = row.hunks.map((hunk) => hunk.new);
    revision[index] = text.replace(/\r\n/g, "\n");
    const answer = await this.review.decide(uid, "accept", note, revision);
    if (answer && answer.ok) this.close();
  }

  cancel() {
    this.close();
    this.page.say("Revision dropped: the suggestion is as it was proposed.");
    this.page.view.focus();
  }

  close() {
    if (this.box) this.box.remove();
    this.box = null;
  }
}
