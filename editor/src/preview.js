// Live preview, as Obsidian shows a note: headings sized, emphasis, code, links and quotes styled and their
// markdown hidden, task checkboxes clickable, except on the lines the cursor or selection is on, which show
// their markdown to be edited. Only the visible lines are looked at, so a keystroke in a long note costs
// what the screen holds. The text itself never changes by being shown: a checkbox click is an ordinary edit
// (a suggestion in suggesting mode, refused when the note is read-only). Lines holding CriticMarkup are left
// as source: tracked changes are drawn, and decided, the same in both modes (tracked.js).

import { Compartment } from "@codemirror/state";
import { Decoration, EditorView, ViewPlugin, WidgetType } from "@codemirror/view";
import { syntaxTree } from "@codemirror/language";

const TASK = /^(\s*(?:[-*+]|\d+[.)])\s+)\[([ xX])\](?=\s|$)/;
const CRITIC = /\{(?:\+\+|--|~~|==|>>)|(?:\+\+|--|~~|==|<<)\}/;
const WIKILINK = /!?\[\[([^\]\n]+?)\]\]/g;
const STORAGE_KEY = "lensrelay.editor.livePreview";

const hidden = Decoration.replace({});
const styles = {
  Emphasis: Decoration.mark({ class: "lr-pv-em" }),
  StrongEmphasis: Decoration.mark({ class: "lr-pv-strong" }),
  InlineCode: Decoration.mark({ class: "lr-pv-code" }),
  Link: Decoration.mark({ class: "lr-pv-link" }),
  Wikilink: Decoration.mark({ class: "lr-pv-link" }),
};
const lines = {
  quote: Decoration.line({ class: "lr-pv-quote" }),
  code: Decoration.line({ class: "lr-pv-codeblock" }),
  rule: Decoration.line({ class: "lr-pv-rule" }),
  table: Decoration.line({ class: "lr-pv-table" }),
};
const headings = [1, 2, 3, 4, 5, 6].map((level) => Decoration.line({ class: `lr-pv-h lr-pv-h${level}` }));
// The marks hidden off the active lines, and what they belong to.
const MARKS = new Set(["HeaderMark", "EmphasisMark", "CodeMark", "LinkMark", "URL", "QuoteMark"]);

class Bullet extends WidgetType {
  eq() {
    return true;
  }
  toDOM() {
    const dot = document.createElement("span");
    dot.className = "lr-pv-bullet";
    dot.textContent = "•";
    return dot;
  }
}
const bullet = Decoration.replace({ widget: new Bullet() });

const TABLE_ROW = /^\s*\|.*\|\s*$/;
const SEPARATOR_CELL = /^:?-+:?$/;
const CELL_MAX = 40;

/** The cells of a table row: split at the pipes no backslash escapes, the outer ones dropped. */
export function tableCells(line) {
  const inner = line.trim().slice(1, -1);
  const cells = [];
  let cell = "";
  for (let i = 0; i < inner.length; i++) {
    if (inner[i] === "\\" && inner[i + 1] === "|") (cell += "|"), i++;
    else if (inner[i] === "|") cells.push(cell.trim()), (cell = "");
    else cell += inner[i];
  }
  cells.push(cell.trim());
  return cells;
}

/** A table row drawn as cells of the block's column widths (in characters); a separator row as a rule. */
class TableRow extends WidgetType {
  constructor(cells, widths, kind) {
    super();
    this.cells = cells;
    this.widths = widths;
    this.kind = kind; // "head", "rule" or "body"
  }
  eq(other) {
    return other.kind === this.kind && other.cells.join("|") === this.cells.join("|") && other.widths.join() === this.widths.join();
  }
  toDOM() {
    const row = document.createElement("span");
    row.className = `lr-pv-row lr-pv-row-${this.kind}`;
    this.widths.forEach((width, i) => {
      const cell = document.createElement("span");
      cell.className = "lr-pv-cell";
      cell.style.width = `${width + 2}ch`;
      cell.textContent = this.kind === "rule" ? "" : this.cells[i] || "";
      row.append(cell);
    });
    return row;
  }
  ignoreEvent() {
    return false; // a click puts the cursor on the row, which then shows its markdown
  }
}

/** The rows of the table around line `number`: {first, rows: [{number, cells}]} (first: its first line). */
function tableAround(doc, number) {
  let first = number;
  while (first > 1 && TABLE_ROW.test(doc.line(first - 1).text)) first--;
  const rows = [];
  for (let n = first; n <= doc.lines && TABLE_ROW.test(doc.line(n).text); n++) {
    rows.push({ number: n, cells: tableCells(doc.line(n).text) });
  }
  return { first, rows };
}

class TaskBox extends WidgetType {
  constructor(checked) {
    super();
    this.checked = checked;
  }
  eq(other) {
    return other.checked === this.checked;
  }
  toDOM(view) {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "lr-pv-task";
    box.checked = this.checked;
    box.setAttribute("aria-label", this.checked ? "Done (click: not done)" : "To do (click: done)");
    box.addEventListener("mousedown", (event) => event.preventDefault()); // keep the cursor where it is
    box.addEventListener("click", (event) => {
      event.preventDefault();
      toggleTask(view, view.posAtDOM(box));
    });
    return box;
  }
  ignoreEvent() {
    return true;
  }
}

/** Tick or untick the task whose `[` is at `at`: one character, typed as a person would type it. */
export function toggleTask(view, at) {
  const text = view.state.doc.sliceString(at, at + 3);
  if (!/^\[[ xX]\]$/.test(text)) return false;
  if (view.state.readOnly) return false;
  view.dispatch({
    changes: { from: at + 1, to: at + 2, insert: text[1] === " " ? "x" : " " },
    userEvent: "input.type",
  });
  return true;
}

function activeLines(state) {
  const active = new Set();
  for (const range of state.selection.ranges) {
    const first = state.doc.lineAt(range.from).number;
    const last = state.doc.lineAt(range.to).number;
    for (let n = first; n <= last; n++) active.add(n);
  }
  return active;
}

/** The decorations of the visible lines: [from, to, decoration] sorted as a RangeSet wants them. */
export function previewRanges(state, visible) {
  const found = [];
  const active = activeLines(state);
  const doc = state.doc;
  const plain = new Map(); // line number -> whether its markdown may be hidden (not active, no CriticMarkup)
  const mayHide = (pos) => {
    const line = doc.lineAt(pos);
    if (!plain.has(line.number)) plain.set(line.number, !active.has(line.number) && !CRITIC.test(line.text));
    return plain.get(line.number);
  };
  const lineDecoration = (from, to, decoration) => {
    for (let pos = from; pos <= to; ) {
      const line = doc.lineAt(pos);
      found.push([line.from, line.from, decoration]);
      pos = line.to + 1;
    }
  };
  const tables = new Map(); // line number -> its table, each read once
  const tree = syntaxTree(state);
  for (const { from, to } of visible) {
    tree.iterate({
      from,
      to,
      enter(node) {
        const name = node.name;
        const heading = /^ATXHeading([1-6])$/.exec(name);
        if (heading) found.push([doc.lineAt(node.from).from, doc.lineAt(node.from).from, headings[heading[1] - 1]]);
        else if (name === "Blockquote") lineDecoration(node.from, node.to, lines.quote);
        else if (name === "FencedCode" || name === "CodeBlock") {
          lineDecoration(node.from, node.to, lines.code);
          return false; // nothing inside a code block is markdown
        } else if (name === "HorizontalRule") lineDecoration(node.from, node.to, lines.rule);
        else if (styles[name] && node.to > node.from) found.push([node.from, node.to, styles[name]]);
        else if (name === "ListMark" && "-*+".includes(doc.sliceString(node.from, node.to)) && mayHide(node.from)) {
          // A bullet reads as one; a task's bullet goes, with its space, for the checkbox.
          const task = TASK.test(doc.lineAt(node.from).text);
          const space = doc.sliceString(node.to, node.to + 1) === " " ? 1 : 0;
          found.push(task ? [node.from, node.to + space, hidden] : [node.from, node.to, bullet]);
        }
        if (MARKS.has(name) && node.to > node.from && mayHide(node.from)) {
          let end = node.to;
          // A heading's "#" and a quote's ">" go with the space after them; a link's URL only inside (…).
          if ((name === "HeaderMark" || name === "QuoteMark") && doc.sliceString(end, end + 1) === " ") end += 1;
          if (name === "URL" && node.node.parent && node.node.parent.name !== "Link") return;
          found.push([node.from, end, hidden]);
        }
      },
    });
    // What CommonMark does not parse: wikilinks, tasks and tables, line by line.
    for (let pos = from; pos <= to; ) {
      const line = doc.lineAt(pos);
      pos = line.to + 1;
      if (TABLE_ROW.test(line.text)) {
        found.push([line.from, line.from, lines.table]);
        if (mayHide(line.from)) {
          const table = tables.get(line.number) || tableAround(doc, line.number);
          for (const row of table.rows) tables.set(row.number, table);
          if (!table.widths) {
            table.widths = [];
            for (const row of table.rows) {
              row.cells.forEach((cell, i) => (table.widths[i] = Math.min(CELL_MAX, Math.max(table.widths[i] || 3, cell.length))));
            }
          }
          const row = table.rows[line.number - table.first];
          const kind = row.cells.every((cell) => SEPARATOR_CELL.test(cell)) ? "rule" : row.number === table.first ? "head" : "body";
          found.push([line.from, line.to, Decoration.replace({ widget: new TableRow(row.cells, table.widths, kind) })]);
        }
      }
      const task = TASK.exec(line.text);
      if (task && mayHide(line.from)) {
        const at = line.from + task[1].length;
        found.push([at, at + 3, Decoration.replace({ widget: new TaskBox(task[2] !== " ") })]);
      }
      for (const link of line.text.matchAll(WIKILINK)) {
        if (link[0].startsWith("!")) continue; // an embed: embeds.js shows it
        const start = line.from + link.index;
        const end = start + link[0].length;
        found.push([start, end, styles.Wikilink]);
        if (!mayHide(start)) continue;
        const bar = link[1].indexOf("|");
        found.push([start, start + 2 + (bar >= 0 ? bar + 1 : 0), hidden]);
        found.push([end - 2, end, hidden]);
      }
    }
  }
  return found;
}

const previewPlugin = ViewPlugin.fromClass(
  class {
    constructor(view) {
      this.decorations = this.build(view);
    }
    update(update) {
      if (update.docChanged || update.viewportChanged || update.selectionSet || update.heightChanged) {
        this.decorations = this.build(update.view);
      }
    }
    build(view) {
      const ranges = previewRanges(view.state, view.visibleRanges);
      return Decoration.set(
        ranges.map(([from, to, decoration]) => decoration.range(from, to)),
        true,
      );
    }
  },
  { decorations: (plugin) => plugin.decorations },
);

/** The live preview and its toggle: {extension, enabled(), set(view, on)}; the choice is kept. */
export function livePreview() {
  const compartment = new Compartment();
  let on = false;
  try {
    on = window.localStorage.getItem(STORAGE_KEY) === "on";
  } catch {
    on = false;
  }
  const content = () => (on ? [previewPlugin, EditorView.editorAttributes.of({ class: "lr-live-preview" })] : []);
  return {
    extension: compartment.of(content()),
    enabled: () => on,
    set(view, value) {
      on = Boolean(value);
      try {
        window.localStorage.setItem(STORAGE_KEY, on ? "on" : "off");
      } catch {
        // private windows: the choice lasts for the page
      }
      view.dispatch({ effects: compartment.reconfigure(content()) });
    },
  };
}
