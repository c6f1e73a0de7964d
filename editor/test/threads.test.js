// The Comments panel's pure parts: finding a thread in the text, noticing when the thread markup changes,
// code points for the server, the listing's order. Run: node --test editor/test/
import assert from "node:assert/strict";
import test from "node:test";

import { parseMarks } from "../src/critic.js";
import { anchorOf, codePoints, partition, threadIdOf, threadSignature, trimmedRange } from "../src/threads.js";

const HL = (id, passage) => `{=={"thread":"${id}"}@@${passage}==}`;
const COMMENT = (id, cid, body, extra = "") =>
  `{>>{"author":"ana","timestamp":1700000000000,"thread":"${id}","comment":"${cid}"${extra}}@@${body}<<}`;

const NOTE = `# Plan\n\nThe ${HL("t1", "quick brown")}${COMMENT("t1", "c1", "Why this word?")}${COMMENT("t1", "c2", "Because.")} fox.\n`;

test("a thread's highlight is where its passage is", () => {
  const marks = parseMarks(NOTE);
  const anchor = anchorOf(marks, "t1");
  assert.equal(NOTE.slice(anchor.from, anchor.to), "quick brown");
  assert.equal(anchorOf(marks, "nope"), null);
  assert.deepEqual(marks.map(threadIdOf), ["t1", "t1", "t1"]);
});

test("a detached thread whose comments stayed is found at its first comment", () => {
  const text = `Gone: ${COMMENT("t2", "c1", "Was here")} end`;
  const anchor = anchorOf(parseMarks(text), "t2");
  assert.equal(anchor.from, text.indexOf("{>>"));
});

test("a suggestion's discussion is found at the suggestion's marks", () => {
  const text = `A {++{"author":"claude","id":"s1"}@@new++}${COMMENT("s1", "c1", "Why?", ',"id":"s1"')} word`;
  const anchor = anchorOf(parseMarks(text), "s1", "s1");
  assert.equal(anchor.from, text.indexOf("{++"));
});

test("the signature changes with the thread markup only", () => {
  const sign = (text) => threadSignature(parseMarks(text), (from, to) => text.slice(from, to));
  const before = sign(NOTE);
  assert.equal(sign(NOTE.replace("# Plan", "# Plans")), before); // typing elsewhere: nothing to fetch
  assert.notEqual(sign(NOTE.replace(" fox.", `${COMMENT("t1", "c3", "OK")} fox.`)), before); // a reply
  assert.notEqual(sign(NOTE.replace('"comment":"c1"', '"comment":"c1","resolved":true')), before); // resolved
  assert.notEqual(sign(NOTE.replace("quick brown", "quick red")), before); // the passage edited
  assert.equal(sign("{==plain highlight==}{>>plain comment<<}"), ""); // not a thread
});

test("code points, as the server counts the selection's start", () => {
  const text = "😀 é then";
  assert.equal(text.indexOf("then"), 5); // UTF-16 units: the emoji is two
  assert.equal(codePoints(text, text.indexOf("then")), 4);
  assert.equal(codePoints("plain", 3), 3);
});

test("open threads first, then the resolved ones, each in the server's order", () => {
  const threads = [
    { id: "a", status: "resolved" },
    { id: "b", status: "open" },
    { id: "c", status: "open", detached: true },
    { id: "d", status: "resolved" },
  ];
  const { open, resolved } = partition(threads);
  assert.deepEqual(open.map((t) => t.id), ["b", "c"]);
  assert.deepEqual(resolved.map((t) => t.id), ["a", "d"]);
});

test("a selection loses the white space at its ends", () => {
  const text = "one \n two three\n";
  assert.deepEqual(trimmedRange(text, 3, 16), [6, 15]);
  assert.deepEqual(trimmedRange(text, 3, 6), [6, 6]);
});
