import { test } from "node:test";
import assert from "node:assert/strict";
import { frontMatter, propertyChange, yamlScalar } from "../src/properties.js";

const NOTE = `---
title: "Photosynthesis: light"
status: draft
tags:
  - biology
  - plants
aliases: [Light reactions, 'Plant''s food']
nested:
  a: 1
---
# Body
`;

function applied(text, change) {
  assert.ok(!change.refusal, change.refusal);
  return text.slice(0, change.from) + change.insert + text.slice(change.to);
}

test("front matter reads as fields; lists as comma-separated items; nested maps are read-only", () => {
  const matter = frontMatter(NOTE);
  const fields = Object.fromEntries(matter.fields.map((f) => [f.key, [f.value, f.list, f.editable]]));
  assert.deepEqual(fields, {
    title: ["Photosynthesis: light", false, true],
    status: ["draft", false, true],
    tags: ["biology, plants", true, true],
    aliases: ["Light reactions, Plant's food", true, true],
    nested: ["", false, false],
  });
  assert.equal(frontMatter("# No front matter\n"), null);
  assert.equal(frontMatter("---\nnever: closed\n"), null);
});

test("a change rewrites only its property, quoting what needs it", () => {
  let text = applied(NOTE, propertyChange(NOTE, "status", "in review: soon"));
  assert.ok(text.includes('status: "in review: soon"\ntags:'));
  text = applied(text, propertyChange(text, "tags", "biology, light, cells", { list: true }));
  assert.ok(text.includes("tags:\n  - biology\n  - light\n  - cells\naliases:"));
  text = applied(text, propertyChange(text, "author", "Ana"));
  assert.ok(text.endsWith("  a: 1\nauthor: Ana\n---\n# Body\n"));
  assert.deepEqual(
    Object.fromEntries(frontMatter(text).fields.map((f) => [f.key, f.value])),
    { title: "Photosynthesis: light", status: "in review: soon", tags: "biology, light, cells", aliases: "Light reactions, Plant's food", nested: "", author: "Ana" },
  );
  assert.equal(applied("# Body\n", propertyChange("# Body\n", "status", "draft")), "---\nstatus: draft\n---\n# Body\n");
});

test("hostile names and values are refused, and what the panel cannot write back is left alone", () => {
  assert.match(propertyChange(NOTE, "bad\nkey", "x").refusal, /name/);
  assert.match(propertyChange(NOTE, "a: b", "x").refusal, /name/);
  assert.match(propertyChange(NOTE, "status", "two\nlines").refusal, /one line/);
  assert.match(propertyChange(NOTE, "status", "{++sneaky++}").refusal, /CriticMarkup/);
  assert.match(propertyChange(NOTE, "nested", "x").refusal, /edit it in the text/);
  const suggested = NOTE.replace("status: draft", "status: {--draft--}{++final++}");
  assert.match(propertyChange(suggested, "title", "x").refusal, /holds suggestions/);
  for (const value of ["yes: no", "#hash", "- dash", "[list]", "'quote", "a #b", "", " padded"]) {
    assert.equal(yamlScalar(value), JSON.stringify(value), value);
  }
  assert.equal(yamlScalar("plain words"), "plain words");
});
