// The editor's tracked changes kept up to date per keystroke (editor/src/tracked.js: only the stretch a change
// can affect is scanned, grouped and drawn again) against the same built from scratch, for random notes full
// of delimiters and random edits; and suggesting mode's rule read around a keystroke against the whole note.
// Run: node --test editor/test/ (tests/suggestions/markup/test_editor_tracked.py runs it in the suite).
import assert from "node:assert/strict";
import test from "node:test";

import { EditorState } from "@codemirror/state";

import { parseText, reparse } from "../src/critic.js";
import { suggest } from "../src/suggesting.js";
import { buildTracked, setPending, setView, trackedChanges } from "../src/tracked.js";

const PIECES = [
  "{++", "++}", "{--", "--}", "{~~", "~>", "~~}", "{==", "==}", "{>>", "<<}", "@@", "{", "}", "+", "-", "~", "=", ">", "<",
  "a", "bc ", " ", "  ", "\n", "word ",
  '{"id":"s1","author":"claude","timestamp":1}@@', '{"id":"s2","author":"ann"}@@', '{"thread":"t1","comment":"c1"}@@',
  '{++{"id":"s1","author":"claude","timestamp":1}@@new++}', '{--{"id":"s1","author":"claude"}@@old--}',
  '{~~{"id":"s2","author":"ann"}@@was~>is~~}', "{++plain++}", "{==passage==}",
  '{==passage=={"thread":"t1"}@@==}', '{==x=={"thread":"t1"}', '{>>{"thread":"t1","comment":"c1"}@@first<<}',
  '{>>{"thread":"t1","comment":"c2","resolved":true}@@second<<}', '{>>{"thread":"t2","comment":"c3"}@@other<<}',
  "{>>a note<<}", '{==p==}{>>{"thread":"t2","comment":"c4"}@@r<<}',
];

function random(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (items) => items[int(items.length)] };
}

const note = (r, pieces) => Array.from({ length: pieces }, () => r.pick(PIECES)).join("");

/** 1-3 apart changes of `length` characters of text: deletions, insertions, replacements. */
function edits(r, length) {
  const points = Array.from({ length: 1 + r.int(3) }, () => r.int(length + 1)).sort((a, b) => a - b);
  const changes = [];
  let after = 0;
  for (const at of points) {
    if (at < after) continue;
    const to = Math.min(length, at + (r.next() < 0.5 ? r.int(4) : r.int(30)));
    const insert = r.next() < 0.3 ? "" : note(r, 1 + r.int(2)).slice(0, 1 + r.int(40));
    changes.push({ from: at, to, insert });
    after = to + 1;
  }
  return changes;
}

function decorationsOf(set) {
  const out = [];
  for (const cursor = set.iter(); cursor.value; cursor.next()) out.push({ from: cursor.from, to: cursor.to, value: cursor.value });
  return out;
}

function assertSame(found, fresh, context) {
  const where = `\n${context}`;
  assert.deepEqual(found.marks, fresh.marks, `marks${where}`);
  const shape = (c) => ({ id: c.id, from: c.from, to: c.to, at: c.at, marks: c.marks, deleted: c.deleted, inserted: c.inserted, stale: c.stale });
  assert.deepEqual(found.changes.map(shape), fresh.changes.map(shape), `changes${where}`);
  const threads = (m) => [...m].map(([id, t]) => [id, t.first, t.comments.size, t.resolved]).sort();
  assert.deepEqual(threads(found.threads), threads(fresh.threads), `threads${where}`);
  const a = decorationsOf(found.decorations);
  const b = decorationsOf(fresh.decorations);
  assert.equal(a.length, b.length, `number of decorations${where}`);
  a.forEach((d, i) => {
    const e = b[i];
    assert.ok(d.from === e.from && d.to === e.to && d.value.eq(e.value), `decoration ${i} ${d.from}-${d.to} vs ${e.from}-${e.to}${where}`);
  });
}

test("reparse after random edits finds what a whole scan finds", () => {
  const r = random(20261129);
  for (let round = 0; round < 3000; round++) {
    let text = note(r, r.int(30));
    let parse = parseText(text);
    for (let step = 0; step < 10; step++) {
      const [{ from, to, insert }] = edits(r, text.length);
      const next = text.slice(0, from) + insert + text.slice(to);
      const found = reparse(parse, (a, b) => next.slice(a, b), next.length, { fromA: from, toA: to, fromB: from, toB: from + insert.length });
      const fresh = parseText(next);
      assert.deepEqual(found.parse.marks, fresh.marks, JSON.stringify({ text, from, to, insert }));
      assert.deepEqual(found.parse.fails, fresh.fails, JSON.stringify({ text, from, to, insert }));
      text = next;
      parse = found.parse;
    }
  }
});

test("the tracked changes kept per transaction are those built from scratch", () => {
  const r = random(32);
  const field = trackedChanges(true);
  for (let round = 0; round < 1500; round++) {
    let state = EditorState.create({ doc: note(r, r.int(40)), extensions: [field] });
    let view = "suggestions";
    let pending = new Map();
    for (let step = 0; step < 12; step++) {
      const roll = r.next();
      let spec;
      if (roll < 0.04) {
        view = r.pick(["suggestions", "accepted", "original"]);
        spec = { effects: setView.of(view) };
      } else if (roll < 0.1) {
        // Pending rows for the ids in the text: some of them match what it holds, some not (stale).
        pending = new Map();
        for (const id of ["s1", "s2"]) {
          const hunks = Array.from({ length: 1 + r.int(3) }, () => ({ old: r.pick(["old", "was", ""]), new: r.pick(["new", "is", ""]) }));
          if (r.next() < 0.7) pending.set(id, { status: r.next() < 0.2 ? "stale" : "pending", hunks });
        }
        spec = { effects: setPending.of(pending) };
      } else {
        spec = { changes: edits(r, state.doc.length) };
      }
      const before = state.doc.toString();
      state = state.update(spec).state;
      const fresh = buildTracked(state, view, pending, true);
      assertSame(state.field(field), fresh, JSON.stringify({ before, spec: spec.changes || "effects", after: state.doc.toString() }));
    }
  }
});

test("a keystroke in a long note reads only around it", () => {
  const lines = [];
  for (let i = 0; i < 5000; i++) {
    lines.push(i % 10 === 0 ? `Line ${i} has {--{"id":"s${i}","author":"claude"}@@an old--}{++{"id":"s${i}","author":"claude"}@@a new++} phrase.` : `Line ${i} is plain text.`);
  }
  const field = trackedChanges(true);
  let state = EditorState.create({ doc: lines.join("\n"), extensions: [field] });
  let read = 0;
  const doc = state.doc;
  const original = doc.constructor.prototype.sliceString;
  doc.constructor.prototype.sliceString = function (from, to) {
    const text = original.call(this, from, to);
    read += text.length;
    return text;
  };
  try {
    const at = state.doc.line(2501).from;
    for (let i = 0; i < 20; i++) state = state.update({ changes: { from: at + i, insert: "k" } }).state;
  } finally {
    doc.constructor.prototype.sliceString = original;
  }
  assert.ok(read < 20 * 20000, `read ${read} characters for 20 keystrokes`);
  assertSame(state.field(field), buildTracked(state, "suggestions", new Map(), true), "long note");
});

test("suggesting reads the rule around the keystroke as it reads it in the whole note", () => {
  const r = random(31);
  const own = '{"author":"ann","timestamp":1,"id":"00000000000000aa","user":7}@@';
  const PERSON = [
    `{++${own}mine++}`, `{--${own}gone--}`, `{++${own}`, "++}", "{--", "--}", '{++{"author":"bob","id":"00000000000000bb","user":8}@@his++}',
    '{--{"author":"claude","id":"s1"}@@old--}', "plain ", "text\n", "{", "}", "+", "-", "@@", '{"author":"mallory","id":"x","user":7}@@',
  ];
  const me = { id: 7, name: "ann" };
  let checked = 0;
  for (let round = 0; round < 4000; round++) {
    const text = Array.from({ length: r.int(14) }, () => (r.next() < 0.5 ? r.pick(PERSON) : r.pick(PIECES))).join("");
    const from = r.int(text.length + 1);
    const to = Math.min(text.length, from + (r.next() < 0.5 ? 0 : r.int(8)));
    const inserted = r.next() < 0.3 ? "" : r.pick(["k", "a b", "+", "}", "{", "-", "~", "@"]);
    const options = { forward: r.next() < 0.5, makeId: () => "0123456789abcdef", now: 5 };
    const whole = suggest(text, from, to, inserted, me, options);
    const around = suggest(text, from, to, inserted, me, { ...options, parse: parseText(text) });
    assert.deepEqual(around, whole, JSON.stringify({ text, from, to, inserted }));
    if (!whole.refusal) checked += 1;
  }
  assert.ok(checked > 1000, `${checked} keystrokes allowed`);
});
