// Files in a note (editor/src/embeds.js): which embeds show an image, and what is refused before any upload.
// Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";

import { imageEmbedsIn, uploadRefusal } from "../src/embeds.js";

test("only embeds of images show one: not links, not notes, not SVG, not a heading", () => {
  const found = imageEmbedsIn("![[a.png]] [[b.png]] ![[c.md]] ![[d.svg]] ![[e.PNG|200]] ![[f.jpg#x]] ![[g 1.webp]]");
  assert.deepEqual(found.map((l) => l.target), ["a.png", "e.PNG", "g 1.webp"]);
});

test("a reader, or a file over the limit, is refused before anything is sent", () => {
  const config = { canEdit: true, maxFileBytes: 1024 * 1024 };
  assert.equal(uploadRefusal(config, [{ name: "a.png", size: 10 }]), null);
  assert.match(uploadRefusal({ ...config, canEdit: false }, [{ name: "a.png", size: 10 }]), /Can edit documents live/);
  assert.match(uploadRefusal(config, [{ name: "big.png", size: 1024 * 1024 + 1 }]), /big\.png is larger than the limit of 1 MB/);
});
