// The browser editor's CriticMarkup parser against the cases the server's parser passes too
// (tests/suggestions/markup/criticmarkup_cases.json). Run: node --test editor/test/
// (tests/suggestions/markup/test_criticmarkup_cases.py runs it in the suite).
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import test from "node:test";

import { parseMarks } from "../src/critic.js";

const CASES = new URL("../../tests/suggestions/markup/criticmarkup_cases.json", import.meta.url);
const { cases } = JSON.parse(readFileSync(CASES, "utf8"));

// The cases count Unicode code points; the editor's indices are UTF-16 units, as CodeMirror and Y.Text's.
const codePoints = (text, index) => Array.from(text.slice(0, index)).length;

function asCase(text, mark) {
  const found = { kind: mark.kind, start: codePoints(text, mark.from), end: codePoints(text, mark.to) };
  if (mark.kind === "substitution") {
    found.content = text.slice(mark.contentFrom, mark.sepAt);
    found.new_content = text.slice(mark.sepAt + 2, mark.contentTo);
  } else {
    found.content = text.slice(mark.contentFrom, mark.contentTo);
  }
  found.metadata = mark.metadata;
  return found;
}

// What each mark leaves when accepted or rejected (the CriticMarkup table), read through the same offsets
// the editor draws and decides with.
function resolved(text, marks, accept) {
  let out = "";
  let at = 0;
  for (const mark of marks) {
    out += text.slice(at, mark.from);
    at = mark.to;
    const whole = text.slice(mark.contentFrom, mark.contentTo);
    if (mark.kind === "highlight") out += whole;
    else if (mark.kind === "addition" && accept) out += whole;
    else if (mark.kind === "deletion" && !accept) out += whole;
    else if (mark.kind === "substitution") {
      out += accept ? text.slice(mark.sepAt + 2, mark.contentTo) : text.slice(mark.contentFrom, mark.sepAt);
    }
  }
  return out + text.slice(at);
}

for (const c of cases) {
  test(c.name, () => {
    const marks = parseMarks(c.text);
    assert.deepEqual(
      marks.map((m) => asCase(c.text, m)),
      c.marks,
    );
    assert.equal(resolved(c.text, marks, true), c.accepted, "accepted");
    assert.equal(resolved(c.text, marks, false), c.rejected, "rejected");
  });
}
