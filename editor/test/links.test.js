// Wikilinks in the editor, the pure parts (editor/src/linkrules.js): resolution by the server's rules within
// the folder and into the other folders (one table with the server: tests/lensrelay/links/editor_cases.json),
// the text a completion writes,
// matching names for the completion and the quick switcher, where the cursor is in a link, headings.
// Run: node --test editor/test/
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import test from "node:test";

import {
  findHeading,
  headingLinkText,
  headingsOf,
  linkContext,
  linksInLine,
  linkTextElsewhere,
  linkTextFor,
  matchKey,
  noteIndex,
  otherFolders,
  rankEntries,
  reachesOtherFolders,
  resolveLink,
  splitLinkBody,
} from "../src/linkrules.js";

const TABLE = JSON.parse(readFileSync(new URL("../../tests/lensrelay/links/editor_cases.json", import.meta.url), "utf8"));
const entry = (path, type = "markdown") => ({ path, type, doc_id: path, url: type === "folder" ? "" : `/edit${path}` });
const ENTRIES = TABLE.entries.map(([path, type]) => entry(path, type));
const INDEX = noteIndex(ENTRIES);
const FROM_ROOT = { sourcePath: "/Welcome.md", folder: "Grove" };
const FROM_DEEP = { sourcePath: "/Deep/Plan.md", folder: "Grove" };
const at = (where, target) => resolveLink(INDEX, where, target)?.path ?? null;

test("a link's body splits into target, heading and alias as the server splits it", () => {
  assert.deepEqual(splitLinkBody(" Oak #Roots | the tree"), { target: "Oak", heading: "Roots", alias: " the tree" });
  assert.deepEqual(splitLinkBody("Oak\\|alias"), { target: "Oak", heading: null, alias: "alias" });
  assert.deepEqual(splitLinkBody("#Only"), { target: "", heading: "Only", alias: null });
  const links = linksInLine("See [[Oak]], ![[diagram.png]] and [[#]] or [[|x]] [[Deep/Plan#Step|the plan]].");
  assert.deepEqual(links.map((l) => [l.target, l.heading, l.alias, l.embed]), [
    ["Oak", null, null, false],
    ["diagram.png", null, null, true],
    ["Deep/Plan", "Step", "the plan", false],
  ]);
  assert.equal("See [[Oak]]".slice(links[0].from, links[0].to), "[[Oak]]");
});

test("links resolve as the server resolves them (one table for both: tests/lensrelay/links/editor_cases.json)", () => {
  for (const [source, link, expected, why] of TABLE.cases) {
    assert.equal(at({ sourcePath: source, folder: TABLE.folder }, link), expected, `[[${link}]] from ${source}: ${why}`);
  }
  assert.equal(matchKey("ΟΔΟΣ"), matchKey("οδος"));
  assert.equal(at(FROM_ROOT, "Deep"), null); // a folder is no target
});

// The vault's table seen from one folder: its own entries, and the other folders as the server lists them.
const VAULT = Object.entries(TABLE.vault.folders).map(([name, list]) => ({
  name,
  entries: list.map(([path, type]) => ({ ...entry(path, type), folder: name })),
}));
function seenFrom(sourceUserPath) {
  const own = VAULT.find((folder) => sourceUserPath.startsWith(`${folder.name}/`));
  const where = { sourcePath: sourceUserPath.slice(own.name.length), folder: own.name };
  return { index: noteIndex(own.entries), where, others: otherFolders(VAULT.filter((folder) => folder !== own)) };
}
const userPath = (found) => (found ? `${found.folder}${found.path}` : null);

test("links into other folders resolve as the server resolves them (the table's vault cases)", () => {
  for (const [source, link, expected, why] of TABLE.vault.cases) {
    const { index, where, others } = seenFrom(source);
    assert.equal(userPath(resolveLink(index, where, link, others)), expected, `[[${link}]] from ${source}: ${why}`);
  }
});

test("without the other folders a link is told apart as needing them only when they could change its answer", () => {
  for (const [source, link, expected] of TABLE.vault.cases) {
    const { index, where, others } = seenFrom(source);
    const alone = userPath(resolveLink(index, where, link));
    const needs = reachesOtherFolders(index, where, link);
    if (!needs) assert.equal(alone, expected, `[[${link}]] from ${source} needs no other folder`);
    if (expected && !expected.startsWith(`${where.folder}/`)) assert.ok(needs, `[[${link}]] from ${source}`);
  }
  const { index, where } = seenFrom("Lens/Welcome.md");
  assert.equal(reachesOtherFolders(index, where, "Notes/Ideas"), false);
  assert.equal(reachesOtherFolders(index, where, "Shared"), false); // found here by name first
  // Found here by name, yet the vault's root comes first: the other folders decide.
  assert.equal(userPath(resolveLink(index, where, "Other/Syllabus")), "Lens/Archive/Other/Syllabus.md");
  assert.equal(reachesOtherFolders(index, where, "Other/Syllabus"), true);
  assert.equal(reachesOtherFolders(index, where, "Nowhere"), true);
  assert.equal(reachesOtherFolders(index, where, "./Nowhere"), false);
});

test("a completion into another folder writes the path from the vault's root, or climbs out when that is taken", () => {
  const { index, where, others } = seenFrom("Lens/Archive/Shared.md");
  const target = (user) => VAULT.flatMap((f) => f.entries).find((e) => userPath(e) === user);
  const text = (user) => linkTextElsewhere(index, where, others, target(user), target(user).folder);
  assert.equal(text("Lens Edu/Week 1/Cell Theory.md"), "Lens Edu/Week 1/Cell Theory");
  // "Other/Syllabus" from /Archive reaches /Archive/Other/Syllabus.md of this folder.
  assert.equal(text("Other/Syllabus.md"), "../../Other/Syllabus");
  for (const user of ["Other/Syllabus.md", "Lens Edu/Shared.md", "Other/diagram.md"]) {
    assert.equal(userPath(resolveLink(index, where, text(user), others)), user);
  }
});

test("a completion writes the shortest text that reaches the note from here", () => {
  const text = (where, path) => linkTextFor(INDEX, where, ENTRIES.find((e) => e.path === path));
  assert.equal(text(FROM_ROOT, "/Oak.md"), "Oak");
  assert.equal(text(FROM_ROOT, "/diagram.png"), "diagram.png");
  assert.equal(text(FROM_ROOT, "/Deep/Plan.md"), "Plan");
  // Two notes named Ideas: the name reaches the nearer, the other needs its path.
  assert.equal(text(FROM_ROOT, "/Notes/Ideas.md"), "Ideas");
  assert.equal(text(FROM_ROOT, "/Deep/Notes/Ideas.md"), "Deep/Notes/Ideas");
  // From /Deep, "Notes/Ideas" is relative: the root's one needs the leading slash.
  assert.equal(text(FROM_DEEP, "/Notes/Ideas.md"), "Ideas");
  assert.equal(text(FROM_DEEP, "/Deep/Notes/Ideas.md"), "Deep/Notes/Ideas");
  for (const e of ENTRIES.filter((x) => x.type !== "folder")) {
    for (const where of [FROM_ROOT, FROM_DEEP]) assert.equal(at(where, linkTextFor(INDEX, where, e)), e.path);
  }
});

test("names match by their letters in order, the name's start first, folders never", () => {
  const ranked = (query) => rankEntries(query, ENTRIES).map((e) => e.path);
  assert.deepEqual(ranked("ide"), ["/Notes/Ideas.md", "/Deep/Notes/Ideas.md"]);
  assert.equal(ranked("pln")[0], "/Deep/Plan.md"); // letters in order, with gaps
  assert.equal(ranked("deep")[0], "/Deep/Plan.md"); // a directory's name counts, after names
  assert.ok(!ranked("deep").includes("/Deep"));
  assert.deepEqual(ranked("zzz"), []);
  assert.equal(ranked("").length, ENTRIES.filter((e) => e.type !== "folder").length);
  assert.equal(ranked("WEL")[0], "/Welcome.md");
  assert.deepEqual(rankEntries("", ENTRIES, 2).length, 2);
});

test("the cursor's place in an unclosed link says what to complete", () => {
  assert.deepEqual(linkContext("See [[Oa"), { kind: "name", from: 6, query: "Oa", target: "Oa" });
  assert.deepEqual(linkContext("See [["), { kind: "name", from: 6, query: "", target: "" });
  assert.deepEqual(linkContext("[[Deep/Plan#St"), { kind: "heading", from: 12, query: "St", target: "Deep/Plan" });
  assert.deepEqual(linkContext("[[#"), { kind: "heading", from: 3, query: "", target: "" });
  assert.deepEqual(linkContext("[[Oak#Roots|the "), { kind: "alias", from: 12, query: "the ", target: "Oak" });
  assert.equal(linkContext("[[Oak]] and more"), null);
  assert.equal(linkContext("no link ["), null);
  assert.equal(linkContext("[[a [b"), null);
});

test("headings are the ATX headings outside code, numbered as the note's lines", () => {
  const note = "---\ntitle: x\n---\n# Oak ##\n\n```\n# not one\n```\n  ## Roots *deep*\n####### seven\n#nospace\n";
  assert.deepEqual(headingsOf(note), [
    { level: 1, text: "Oak", line: 4 },
    { level: 2, text: "Roots *deep*", line: 9 },
  ]);
  assert.deepEqual(headingsOf("# A\n~~~\n# B\n~~~\n# C").map((h) => h.text), ["A", "C"]);
  assert.equal(headingLinkText("What [is] it? #1 | ^x"), "What is it? 1 x");
  assert.equal(findHeading(headingsOf(note), "roots  *DEEP*").line, 9);
  assert.equal(findHeading(headingsOf(note), "Nope"), null);
});
