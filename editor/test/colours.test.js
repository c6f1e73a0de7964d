// The room's colours (editor/src/colours.js): one each, however many share a room, and kept. Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";

import { PALETTE, assignColours, assistantLabelCss, roomColours } from "../src/colours.js";

const EIGHT = ["sam", "lin", "eve", "sid", "ria", "claude", "gpt", "ann"];

test("a palette of at least eight distinct colours", () => {
  assert.ok(PALETTE.length >= 8);
  assert.equal(new Set(PALETTE).size, PALETTE.length);
});

test("eight people and assistants get eight different colours", () => {
  const given = assignColours(EIGHT);
  assert.equal(given.size, 8);
  assert.equal(new Set(given.values()).size, 8);
  for (const colour of given.values()) assert.ok(PALETTE.includes(colour));
});

test("names a hash puts on one colour still get two", () => {
  // Every 2-letter name: many share a preferred colour, none shares a colour while the palette lasts.
  const names = [];
  for (const a of "abcdefghij") for (const b of "abcdefghij") names.push(a + b);
  for (let start = 0; start + PALETTE.length <= names.length; start += PALETTE.length) {
    const room = names.slice(start, start + PALETTE.length);
    assert.equal(new Set(assignColours(room).values()).size, PALETTE.length, room.join(","));
  }
});

test("the assignment is stable: the same for any order, and kept when someone joins or leaves", () => {
  const first = assignColours(EIGHT);
  const shuffled = assignColours([...EIGHT].reverse());
  assert.deepEqual([...shuffled.entries()].sort(), [...first.entries()].sort());
  const joined = assignColours([...EIGHT, "zoe"], first);
  for (const name of EIGHT) assert.equal(joined.get(name), first.get(name), name);
  assert.equal(new Set(joined.values()).size, 9);
  // Someone leaving changes no one's colour either (colours are never taken back during a page's life).
  const again = assignColours(EIGHT.slice(1), joined);
  for (const name of EIGHT) assert.equal(again.get(name), first.get(name), name);
});

test("more people than colours share the least used ones", () => {
  const many = Array.from({ length: PALETTE.length * 2 }, (_, i) => `person${i}`);
  const counts = new Map();
  for (const colour of assignColours(many).values()) counts.set(colour, (counts.get(colour) || 0) + 1);
  assert.deepEqual([...new Set(counts.values())], [2]);
});

test("the page's awareness: every user in the colour given here, recoloured only on a change", () => {
  const listeners = [];
  const states = new Map([
    [1, { user: { name: "sam", color: "#000000" } }],
    [2, { user: { name: "claude", color: "#7e57c2" }, assistant: true }],
    [3, { user: { name: "gpt", color: "#7e57c2" }, assistant: true }],
    [4, {}],
  ]);
  let reads = 0;
  const raw = {
    doc: { clientID: 1 },
    getStates() {
      reads += 1;
      return states;
    },
    on(name, fn) {
      listeners.push(fn);
    },
  };
  let assistants = null;
  const room = roomColours({ onAssistants: (list) => (assistants = list) });
  const seen = room.awareness(raw);
  const recoloured = seen.getStates();
  assert.equal(seen.doc.clientID, 1);
  const colours = [1, 2, 3].map((id) => recoloured.get(id).user.color);
  assert.equal(new Set(colours).size, 3);
  assert.equal(recoloured.get(2).user.colorLight, `${colours[1]}33`);
  assert.equal(states.get(2).user.color, "#7e57c2", "the provider's own states are left alone");
  assert.deepEqual(new Set(assistants), new Set([colours[1], colours[2]]));
  assert.equal(room.colourOf("claude"), colours[1]);
  seen.getStates();
  assert.equal(reads, 1, "read again only after a change");
  for (const fn of listeners) fn();
  seen.getStates();
  assert.equal(reads, 2);
});

test("the label rule finds an assistant's caret by its colour", () => {
  const css = assistantLabelCss(["#1976d2"]);
  assert.match(css, /\.cm-ySelectionCaret\[style\*="background-color: #1976d2;"\] > \.cm-ySelectionInfo \{ top: /);
  assert.match(css, /\[style\*="background-color: rgb\(25, 118, 210\);"\]/);
  assert.equal(assistantLabelCss([]), "");
});
