import { test } from "node:test";
import assert from "node:assert/strict";
import { EditorState, EditorSelection } from "@codemirror/state";
import { ensureSyntaxTree } from "@codemirror/language";
import { markdown } from "@codemirror/lang-markdown";
import { previewRanges, tableCells } from "../src/preview.js";

const NOTE = [
  "# Title", // 1
  "", // 2
  "Some *soft* and **bold** and `code` and [a link](https://example.org) and [[Other note|alias]].", // 3
  "- [ ] to do", // 4
  "- [x] done", // 5
  "- plain item", // 6
  "> quoted", // 7
  "The {++inserted++} words and *kept* marks.", // 8
  "## Second", // 9
].join("\n");

function shown(cursorLine) {
  const probe = EditorState.create({ doc: NOTE, extensions: [markdown()] });
  const at = probe.doc.line(cursorLine).from;
  const state = EditorState.create({ doc: NOTE, extensions: [markdown()], selection: EditorSelection.cursor(at) });
  ensureSyntaxTree(state, state.doc.length, 5000);
  const ranges = previewRanges(state, [{ from: 0, to: state.doc.length }]);
  // The text a reader sees: what the replace decorations hide taken out (widgets shown as [widget]).
  const hide = ranges.filter(([from, to, d]) => to > from && d.spec.widget === undefined && !d.spec.class);
  const widgets = ranges.filter(([, , d]) => d.spec.widget);
  let text = "";
  for (let pos = 0; pos < NOTE.length; pos++) {
    const widget = widgets.find(([from]) => from === pos);
    if (widget) text += "checked" in widget[2].spec.widget ? (widget[2].spec.widget.checked ? "☑" : "☐") : "•";
    if (hide.some(([from, to]) => from <= pos && pos < to) || widgets.some(([from, to]) => from <= pos && pos < to)) continue;
    text += NOTE[pos];
  }
  const classes = ranges.filter(([from, to, d]) => from === to && d.spec.class).map(([from, , d]) => [state.doc.lineAt(from).number, d.spec.class]);
  return { lines: text.split("\n"), classes };
}

test("off the cursor's line, markdown is hidden and styled; tasks become checkboxes", () => {
  const { lines, classes } = shown(2);
  assert.equal(lines[0], "Title");
  assert.equal(lines[2], "Some soft and bold and code and a link and alias.");
  assert.equal(lines[3], "☐ to do");
  assert.equal(lines[4], "☑ done");
  assert.equal(lines[5], "• plain item");
  assert.equal(lines[6], "quoted");
  assert.equal(lines[8], "Second");
  assert.deepEqual(classes.filter(([, c]) => c.includes("lr-pv-h")), [[1, "lr-pv-h lr-pv-h1"], [9, "lr-pv-h lr-pv-h2"]]);
  assert.ok(classes.some(([n, c]) => n === 7 && c === "lr-pv-quote"));
});

test("the cursor's line shows its markdown, and so does a line with CriticMarkup", () => {
  const { lines } = shown(3);
  assert.equal(lines[2], NOTE.split("\n")[2]);
  assert.equal(lines[0], "Title");
  assert.equal(lines[7], "The {++inserted++} words and *kept* marks.");
  assert.equal(shown(1).lines[0], "# Title");
});

test("a table off the cursor's lines is drawn as rows of cells with the block's column widths", () => {
  const text = "Intro\n| Name | Role |\n|---|:-:|\n| Ana \\| Bo | Editor |\n\nAfter";
  const state = EditorState.create({ doc: text, extensions: [markdown()], selection: EditorSelection.cursor(0) });
  ensureSyntaxTree(state, state.doc.length, 5000);
  const rows = previewRanges(state, [{ from: 0, to: text.length }])
    .filter(([, , d]) => d.spec.widget && "widths" in d.spec.widget)
    .map(([from, , d]) => [state.doc.lineAt(from).number, d.spec.widget.kind, d.spec.widget.cells, d.spec.widget.widths]);
  assert.deepEqual(rows, [
    [2, "head", ["Name", "Role"], [8, 6]],
    [3, "rule", ["---", ":-:"], [8, 6]],
    [4, "body", ["Ana | Bo", "Editor"], [8, 6]],
  ]);
  assert.deepEqual(tableCells("| a | b \\| c |"), ["a", "b | c"]);
  // The cursor's row shows its markdown; the others stay drawn.
  const editing = EditorState.create({ doc: text, extensions: [markdown()], selection: EditorSelection.cursor(text.indexOf("Ana")) });
  const drawn = previewRanges(editing, [{ from: 0, to: text.length }]).filter(([, , d]) => d.spec.widget && "widths" in d.spec.widget);
  assert.deepEqual(drawn.map(([from]) => editing.doc.lineAt(from).number), [2, 3]);
});
