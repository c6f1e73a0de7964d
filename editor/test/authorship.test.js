// Who wrote what, read from the Yjs text: runs by client id in CodeMirror's units (UTF-16), and a line's
// main author. Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";
import * as Y from "yjs";

import { acceptedBy, authorRuns, firstRunAfter, mainAuthor } from "../src/authorship.js";

function twoWriters() {
  const ana = new Y.Doc();
  ana.clientID = 11;
  ana.getText("contents").insert(0, "Hello 😀 world\n");
  const bot = new Y.Doc();
  bot.clientID = 22;
  Y.applyUpdate(bot, Y.encodeStateAsUpdate(ana));
  bot.getText("contents").insert(6, "big ");
  bot.getText("contents").delete(0, 1); // a deletion leaves no run of its own
  Y.applyUpdate(ana, Y.encodeStateAsUpdate(bot));
  return ana.getText("contents");
}

test("runs follow the writers of the live text, in UTF-16 units", () => {
  const text = twoWriters();
  assert.equal(text.toString(), "ello big 😀 world\n");
  const runs = authorRuns(text);
  assert.deepEqual(
    runs.map((r) => [text.toString().slice(r.from, r.to), r.client]),
    [["ello ", 11], ["big ", 22], ["😀 world\n", 11]],
  );
  assert.equal(runs[runs.length - 1].to, text.toString().length); // what CodeMirror counts
  assert.deepEqual([runs[0].before.client, runs[0].before.clock], [11, 0]); // the removed "H" is right before
  assert.equal(runs[1].before, null);
});

test("accepted: the same person removed what stood right before and after a run", () => {
  const doc = new Y.Doc();
  doc.clientID = 7;
  const text = doc.getText("contents");
  text.insert(0, "{++swift++}");
  text.delete(8, 3); // the closing delimiter
  text.delete(0, 3); // the opening one
  const [run] = authorRuns(text);
  assert.equal(text.toString(), "swift");
  const by = (name) => ({ getUserByDeletedId: () => name });
  assert.equal(acceptedBy(run, by("rita")), "rita");
  assert.equal(acceptedBy(run, by(undefined)), null);
  const split = { getUserByDeletedId: (id) => (id.clock === 0 ? "rita" : "otto") };
  assert.equal(acceptedBy(run, split), null); // two people, two edits: not an acceptance
  assert.equal(acceptedBy({ ...run, after: null }, by("rita")), null);
});

test("a line's main author has the most of its characters", () => {
  const runs = [
    { from: 0, to: 3, client: 1 },
    { from: 3, to: 10, client: 2 },
    { from: 10, to: 12, client: 1 },
  ];
  const nameOf = (c) => (c === 1 ? "ana" : "claude");
  assert.equal(mainAuthor(runs, 0, 12, nameOf), "claude");
  assert.equal(mainAuthor(runs, 0, 3, nameOf), "ana");
  assert.equal(mainAuthor(runs, 12, 13, nameOf), null);
  assert.deepEqual([0, 2, 3, 10, 11, 12].map((pos) => firstRunAfter(runs, pos)), [0, 0, 1, 2, 2, 3]);
});
