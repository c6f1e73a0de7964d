// The room's colours (editor/src/colours.js): one each, however many share a room, and kept. Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";

import {
  PALETTE,
  assignColours,
  assistantLabelCss,
  mustPickAgain,
  ownColour,
  preferredIndex,
  publishOwnColour,
  roomColours,
} from "../src/colours.js";

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

/** Awareness objects of several pages sharing one room: each page's `getStates()` holds every page's state
 * (as providers relay them), and every page hears each change. */
function sharedRoom() {
  const states = new Map();
  const pages = [];
  const notify = () => pages.forEach((page) => page.listeners.forEach((fn) => fn()));
  return {
    states,
    join(clientID) {
      const page = {
        clientID,
        listeners: [],
        getStates: () => states,
        on(name, fn) {
          this.listeners.push(fn);
        },
        setLocalStateField(field, value) {
          states.set(clientID, { ...(states.get(clientID) || {}), [field]: value });
          notify();
        },
      };
      pages.push(page);
      return page;
    },
  };
}

test("a participant picks its preferred colour when free and the next free one when shown", () => {
  const name = "sam";
  const preferred = PALETTE[preferredIndex(name)];
  assert.equal(ownColour(name, new Map()), preferred);
  const taken = new Map([[9, { user: { name: "lin", color: preferred } }]]);
  assert.equal(ownColour(name, taken), PALETTE[(preferredIndex(name) + 1) % PALETTE.length]);
  // Its own other tab's colour is kept, unless someone else shows it too.
  const other = PALETTE[(preferredIndex(name) + 3) % PALETTE.length];
  assert.equal(ownColour(name, new Map([[4, { user: { name, color: other } }]])), other);
  const both = new Map([
    [4, { user: { name, color: other } }],
    [5, { user: { name: "lin", color: other } }],
  ]);
  assert.notEqual(ownColour(name, both), other);
});

test("who showed a colour first keeps it; at the same moment the lower client id", () => {
  const states = new Map([[5, { user: { name: "lin", color: "#d32f2f", since: 100 } }]]);
  assert.equal(mustPickAgain(7, "sam", "#d32f2f", 200, states), true);
  assert.equal(mustPickAgain(7, "sam", "#d32f2f", 50, states), false);
  assert.equal(mustPickAgain(7, "sam", "#d32f2f", 100, states), true);
  assert.equal(mustPickAgain(3, "sam", "#d32f2f", 100, states), false);
  assert.equal(mustPickAgain(7, "lin", "#d32f2f", 200, states), false, "the same person's other tab");
  assert.equal(mustPickAgain(7, "sam", "#1976d2", 200, states), false);
  // The server's assistants publish no `since`: they were there first.
  const assistant = new Map([[1, { user: { name: "claude", color: "#d32f2f" }, assistant: true }]]);
  assert.equal(mustPickAgain(7, "sam", "#d32f2f", 200, assistant), true);
});

test("every page shows everyone in the colour they publish, whatever the order they came in", () => {
  // Names chosen so that several prefer one colour: the picks must move apart.
  const names = [];
  for (let i = 0; names.length < 8; i++) {
    const name = `p${i}`;
    if (names.filter((n) => preferredIndex(n) === preferredIndex(name)).length < 3) names.push(name);
  }
  for (const order of [names, [...names].reverse(), [names[3], names[0], names[7], names[1], names[6], names[2], names[5], names[4]]]) {
    const room = sharedRoom();
    let clock = 1000;
    const pages = order.map((name, i) => {
      const raw = room.join(100 + ((i * 37) % 11));
      const colours = roomColours();
      const seen = colours.awareness(raw);
      publishOwnColour(raw, name, { now: () => (clock += 1) });
      return { name, colours, seen };
    });
    const shown = pages.map(({ seen, colours }) => {
      seen.getStates();
      return new Map(names.map((name) => [name, colours.colourOf(name)]));
    });
    for (const map of shown) assert.deepEqual([...map.entries()], [...shown[0].entries()], order.join(","));
    assert.equal(new Set(shown[0].values()).size, names.length, "no two alike");
    for (const { name } of pages) {
      const published = [...room.states.values()].find((s) => s.user.name === name).user.color;
      assert.equal(shown[0].get(name), published, name);
    }
  }
});

test("two who join at the same moment with one preferred colour end up apart, on every page", () => {
  const room = sharedRoom();
  const a = room.join(10);
  const b = room.join(20);
  const pageA = roomColours();
  const pageB = roomColours();
  const seenA = pageA.awareness(a);
  const seenB = pageB.awareness(b);
  // Both pick before either hears the other (the same instant): then each hears the other.
  const states = room.states;
  const sameName = (n) => PALETTE[preferredIndex(n)];
  let second = "q0";
  for (let i = 1; sameName(second) !== sameName("p0"); i++) second = `q${i}`;
  states.set(10, { user: { name: "p0", color: sameName("p0"), since: 5 } });
  states.set(20, { user: { name: second, color: sameName(second), since: 5 } });
  publishOwnColour(b, second, { now: () => 5 });
  seenA.getStates();
  seenB.getStates();
  const colourA = states.get(10).user.color;
  const colourB = states.get(20).user.color;
  assert.notEqual(colourA, colourB);
  assert.equal(colourA, sameName("p0"), "the lower id kept it");
  assert.equal(pageA.colourOf(second), colourB);
  assert.equal(pageB.colourOf("p0"), colourA);
});
