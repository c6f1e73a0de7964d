import { test } from "node:test";
import assert from "node:assert/strict";
import { parseMarks, groupChanges } from "../src/critic.js";
import { insertionAround, revisionDraft } from "../src/revising.js";

const AI = '{"author":"claude","id":"a1"}@@';
const TEXT = `The {--quick brown--}{++${AI}slow red++} fox and {++{"author":"ana","id":"b2","user":7}@@ana's words++}.`;

function setup(text = TEXT) {
  const changes = groupChanges(parseMarks(text), text);
  return { changes, slice: (from, to) => text.slice(from, to) };
}

test("a keystroke inside an assistant's insertion starts a revision of it, with the caret after it", () => {
  const { changes, slice } = setup();
  const at = TEXT.indexOf("slow") + 4;
  const edits = [{ from: at, to: at, inserted: "ish" }];
  const around = insertionAround(changes, edits, 3);
  assert.equal(around.change.id, "a1");
  const draft = revisionDraft(changes, around, edits, slice);
  assert.deepEqual(draft, { index: 0, text: "slowish red", caret: 7 });
});

test("deleting inside it, at either edge, revises it too", () => {
  const { changes, slice } = setup();
  const start = TEXT.indexOf("slow red");
  const first = [{ from: start, to: start + 1, inserted: "" }];
  assert.deepEqual(revisionDraft(changes, insertionAround(changes, first, 3), first, slice), { index: 0, text: "low red", caret: 0 });
  const end = start + "slow red".length;
  const last = [{ from: end, to: end, inserted: "dish" }];
  assert.equal(revisionDraft(changes, insertionAround(changes, last, 3), last, slice).text, "slow reddish");
});

test("typing in plain text, across a delimiter, in a deletion, or in one's own insertion is no revision", () => {
  const { changes } = setup();
  const plain = TEXT.indexOf("fox");
  assert.equal(insertionAround(changes, [{ from: plain, to: plain, inserted: "x" }], 3), null);
  const open = TEXT.indexOf("{++");
  assert.equal(insertionAround(changes, [{ from: open, to: open + 5, inserted: "" }], 3), null);
  const deleted = TEXT.indexOf("quick") + 2;
  assert.equal(insertionAround(changes, [{ from: deleted, to: deleted, inserted: "x" }], 3), null);
  const own = TEXT.indexOf("ana's") + 2;
  assert.equal(insertionAround(changes, [{ from: own, to: own, inserted: "x" }], 7), null);
  // Another person's insertion is revised like an assistant's.
  assert.equal(insertionAround(changes, [{ from: own, to: own, inserted: "x" }], 3).change.id, "b2");
});

test("the part revised is counted among the suggestion's parts in the note's order", () => {
  const text = `A {++${AI}one++} b {++${AI}two++} c`;
  const { changes, slice } = setup(text);
  const at = text.indexOf("two") + 3;
  const edits = [{ from: at, to: at, inserted: "!" }];
  assert.deepEqual(revisionDraft(changes, insertionAround(changes, edits, 3), edits, slice), { index: 1, text: "two!", caret: 4 });
});
