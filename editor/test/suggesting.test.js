// Suggesting mode's planner: a person's keystrokes as their own CriticMarkup, checked by the same rule the
// server applies (suggestions/markup/suggesting.py). Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";

import { escapedJson, suggest, suggestingRefusal } from "../src/suggesting.js";
import { parseMarks } from "../src/critic.js";

const SAM = { id: 7, name: "sam" };
const ID = "0123456789abcdef";
const options = { makeId: () => ID, now: 1 };
const META = `{"author":"sam","timestamp":1,"id":"${ID}","user":7}@@`;

/** A session: the text and the cursor, keystroke by keystroke, each checked by the rule. */
function session(text, cursor) {
  const state = { text, cursor };
  const apply = (from, to, inserted, forward = false) => {
    const made = suggest(state.text, from, to, inserted, SAM, { ...options, forward });
    if (made.refusal) return made.refusal;
    assert.equal(suggestingRefusal(state.text, made.after, SAM), null);
    state.text = made.after;
    state.cursor = made.cursor;
    return null;
  };
  return {
    state,
    type: (chars) => { for (const ch of chars) assert.equal(apply(state.cursor, state.cursor, ch), null); },
    backspace: (n = 1) => { for (let i = 0; i < n; i++) assert.equal(apply(state.cursor - 1, state.cursor, ""), null); },
    del: (n = 1) => { for (let i = 0; i < n; i++) assert.equal(apply(state.cursor, state.cursor + 1, "", true), null); },
    replace: (from, to, inserted) => apply(from, to, inserted),
  };
}

test("typing becomes one insertion, extended as the person goes on", () => {
  const s = session("The fox jumps.", 7);
  s.type(" brown");
  assert.equal(s.state.text, `The fox{++${META} brown++} jumps.`);
  assert.equal(s.state.text.slice(0, s.state.cursor).endsWith(" brown"), true);
  s.backspace(2);
  assert.equal(s.state.text, `The fox{++${META} bro++} jumps.`);
});

test("backspace and delete make one deletion that grows", () => {
  const s = session("The quick fox.", 9);
  s.backspace(5);
  assert.equal(s.state.text, `The {--${META}quick--} fox.`);
  const t = session("The quick fox.", 4);
  t.del(6);
  assert.equal(t.state.text, `The {--${META}quick --}fox.`);
});

test("typing over a selection is one replacement", () => {
  const s = session("The quick fox.", 4);
  assert.equal(s.replace(4, 9, "slow"), null);
  assert.equal(s.state.text, `The {--${META}quick--}{++${META}slow++} fox.`);
  s.type("er");
  assert.equal(s.state.text, `The {--${META}quick--}{++${META}slower++} fox.`);
  assert.equal(parseMarks(s.state.text).length, 2);
});

test("another author's suggestion is never changed", () => {
  const theirs = `{++{"author":"claude","timestamp":1,"id":"aaaaaaaaaaaaaaaa"}@@quick ++}`;
  const text = `The ${theirs}fox.`;
  const s = session(text, 0);
  const inside = text.indexOf("quick") + 2;
  assert.match(s.replace(inside, inside, "X"), /decide it/);
  assert.match(s.replace(4, 4 + theirs.length + 3, ""), /claude's suggestion is in the way/);
  assert.equal(s.state.text, text);
});

test("metadata never holds a delimiter, as the server writes it", () => {
  assert.equal(escapedJson("a@@b"), '"a@\\u0040b"');
  assert.equal(escapedJson("x++}"), '"x++\\u007d"');
  const odd = { id: 3, name: "a@@b" };
  const made = suggest("Hi", 2, 2, "!", odd, options);
  assert.equal(made.refusal, undefined);
  assert.equal(parseMarks(made.after)[0].metadata.author, "a@@b");
});

test("a closing delimiter typed into one's insertion is refused before it is sent", () => {
  const s = session("A", 1);
  s.type("b");
  assert.notEqual(s.replace(s.state.cursor, s.state.cursor, "++}"), null);
});

test("whatever is planned, fast or not, the full rule allows", () => {
  let seed = 7;
  const random = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  const alphabet = "ab+-}{~>@=<k ";
  const own = `{++${META}ab+c++}`;
  const base = `x {++{"author":"claude","timestamp":1,"id":"aaaaaaaaaaaaaaaa"}@@quick++} y ${own} z`;
  const inside = base.indexOf("ab+c");
  let planned = 0;
  for (let i = 0; i < 4000; i++) {
    const from = random(3) ? inside - 2 + random(9) : random(base.length + 1);
    const to = Math.min(base.length, from + [0, 0, 1, 2][random(4)]);
    let typed = "";
    for (let k = random(3); k > 0; k--) typed += alphabet[random(alphabet.length)];
    const made = suggest(base, from, to, typed, SAM, options);
    if (made.refusal) continue;
    assert.equal(suggestingRefusal(base, made.after, SAM), null, JSON.stringify({ from, to, typed }));
    planned++;
  }
  assert.ok(planned > 1000, `only ${planned} planned`);
});

test("replace all: each replacement is a suggestion of its own, checked like a keystroke", async () => {
  const { suggestEach } = await import("../src/suggesting.js");
  let n = 0;
  const ids = { makeId: () => `${ID.slice(0, 15)}${n++}`, now: 1 };
  const text = "a cat, a cat and a cat";
  const pieces = [...text.matchAll(/cat/g)].map((m) => ({ from: m.index, to: m.index + 3, inserted: "dog" }));
  const made = suggestEach(text, pieces, SAM, ids);
  assert.equal(made.refusal, undefined);
  assert.equal(made.steps.length, 3);
  assert.equal(suggestingRefusal(text, made.after, SAM), null);
  const marks = parseMarks(made.after);
  assert.equal(marks.filter((m) => m.kind === "deletion").length, 3);
  assert.equal(marks.filter((m) => m.kind === "addition").length, 3);
  assert.equal(made.after.replace(/\{--\{[^}]*\}@@cat--\}\{\+\+\{[^}]*\}@@dog\+\+\}/g, "dog"), "a dog, a dog and a dog");
  // Another author's suggestion in the way refuses the whole.
  const theirs = `a {++{"author":"claude","timestamp":1,"id":"x"}@@cat++}, a cat`;
  const inTheWay = [...theirs.matchAll(/cat/g)].map((m) => ({ from: m.index, to: m.index + 3, inserted: "dog" }));
  assert.match(suggestEach(theirs, inTheWay, SAM, ids).refusal, /claude/);
});
