import { test } from "node:test";
import assert from "node:assert/strict";
import * as Y from "yjs";
import { backlinksOf } from "../src/panels.js";

test("backlinks are the folder's notes whose uuids the folder document lists for this one", () => {
  const doc = new Y.Doc();
  const filemeta = doc.getMap("filemeta_v0");
  const backlinks = doc.getMap("backlinks_v0");
  filemeta.set("/Plan.md", { id: "p", type: "markdown" });
  filemeta.set("/Other.md", { id: "o", type: "markdown" });
  filemeta.set("/Notes/Third.md", { id: "t", type: "markdown" });
  backlinks.set("p", ["t", "o", "gone"]);
  assert.deepEqual(backlinksOf(backlinks, filemeta, "p"), ["/Notes/Third.md", "/Other.md"]);
  assert.deepEqual(backlinksOf(backlinks, filemeta, "o"), []);
  // A Relay client's Y.Map entries read the same.
  const entry = new Y.Map();
  filemeta.set("/Mapped.md", entry);
  entry.set("id", "m");
  backlinks.set("o", Y.Array.from(["m"]));
  assert.deepEqual(backlinksOf(backlinks, filemeta, "o"), ["/Mapped.md"]);
});
