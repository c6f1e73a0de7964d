// The Properties panel: a note's front matter as fields, as Obsidian shows it. Each top-level `key: value`
// of the YAML is a field; a list (`key:` then `  - item` lines, or `[a, b]`) is one field of comma-separated
// items. Changing a field rewrites only that property's lines, through the editor, as typing would (so it is
// a suggestion in suggesting mode, and nothing for someone who may only read); "Add" appends a property,
// making the front matter when the note has none. Anything the panel cannot write back exactly (nested
// maps, multi-line text, suggestions inside the front matter) is shown read-only: edit it in the text.

import { EditorView } from "@codemirror/view";

const OPENING = /^\ufeff?---[ \t]*$/;
// The panel reads this much of a note: front matter is short, a keystroke further down costs nothing here.
const HEAD = 20000;
const CLOSING = /^(?:---|\.\.\.)[ \t]*$/;
const KEY = /^([A-Za-z0-9_][A-Za-z0-9_ .-]*?):(?:[ \t]+(.*?))?[ \t]*$/;
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_ .-]{0,63}$/;
const CRITIC = /\{(?:\+\+|--|~~|==|>>)|(?:\+\+|--|~~|==|<<)\}/;
const LIST_ITEM = /^[ \t]+-[ \t]+(.*?)[ \t]*$/;
// A plain YAML scalar that reads back as the same text (no quoting needed).
const PLAIN = /^[^\s#:'"{}[\],&*!|>%@`?-](?:[^#:\n]*[^\s#:])?$/;

function unquote(value) {
  if (/^".*"$/.test(value)) {
    try {
      return JSON.parse(value);
    } catch {
      return null;
    }
  }
  if (/^'.*'$/.test(value)) return value.slice(1, -1).replace(/''/g, "'");
  if (/^["']/.test(value) || /^[|>]/.test(value)) return null; // unclosed, or a block scalar
  return value.replace(/[ \t]+#.*$/, "");
}

/** A value as YAML writes it back: plain when that reads the same, else double-quoted. */
export function yamlScalar(value) {
  return PLAIN.test(value) ? value : JSON.stringify(value);
}

/**
 * The front matter of `text`: null without one, else {from, to, end, fields, readOnly} where `from`/`to`
 * bound the YAML lines, `end` is where a new property goes, and each field is
 * {key, value, list, from, to, editable} (`from`/`to`: the property's lines, without the last line break).
 */
export function frontMatter(text) {
  const lines = text.split("\n");
  if (!OPENING.test(lines[0] || "")) return null;
  let offset = lines[0].length + 1;
  const from = offset;
  const fields = [];
  let current = null;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const start = offset;
    offset += line.length + 1;
    if (CLOSING.test(line)) {
      const readOnly = CRITIC.test(text.slice(from, start));
      return { from, to: start, end: start, fields: readOnly ? fields.map((f) => ({ ...f, editable: false })) : fields, readOnly };
    }
    const key = KEY.exec(line);
    if (key) {
      const raw = key[2] || "";
      let value = unquote(raw);
      let list = false;
      if (/^\[.*\]$/.test(raw)) {
        const inner = raw.slice(1, -1).trim();
        const items = inner ? inner.split(",").map((item) => unquote(item.trim())) : [];
        list = true;
        value = items.includes(null) ? null : items.join(", ");
      }
      current = { key: key[1], value: value === null ? raw : value, list, from: start, to: start + line.length, editable: value !== null };
      fields.push(current);
    } else if (current && /^[ \t]/.test(line) && line.trim()) {
      const item = LIST_ITEM.exec(line);
      const wasList = current.list || current.value === "";
      if (item && wasList && unquote(item[1]) !== null) {
        current.list = true;
        current.value = current.value ? `${current.value}, ${unquote(item[1])}` : unquote(item[1]);
      } else current.editable = false; // a nested map or a multi-line text
      current.to = start + line.length;
    } else if (line.trim() && !line.trimStart().startsWith("#")) current = null;
  }
  return null; // never closed: no front matter
}

/** The change that gives property `key` the value `value` (a list: comma-separated items): {from, to, insert},
 * or {refusal} saying why it cannot be written. */
export function propertyChange(text, key, value, { list = false } = {}) {
  if (!NAME.test(key)) return { refusal: "A property's name is letters, digits, spaces, '_', '.' and '-' (up to 64)." };
  if (/[\r\n]/.test(value)) return { refusal: "A property's value is one line." };
  if (CRITIC.test(value)) return { refusal: "A property's value cannot hold CriticMarkup delimiters." };
  const items = value.split(",").map((item) => item.trim()).filter(Boolean);
  const written = list ? `${key}:${items.map((item) => `\n  - ${yamlScalar(item)}`).join("")}` : `${key}: ${yamlScalar(value.trim())}`;
  const matter = frontMatter(text);
  if (!matter) return { from: 0, to: 0, insert: `---\n${written}\n---\n` };
  if (matter.readOnly) return { refusal: "The front matter holds suggestions: decide them first, or edit it in the text." };
  const field = matter.fields.find((f) => f.key === key);
  if (!field) return { from: matter.end, to: matter.end, insert: `${written}\n` };
  if (!field.editable) return { refusal: `${key} is more than the panel can write back: edit it in the text.` };
  return { from: field.from, to: field.to, insert: written };
}

/** The panel, above the text: {extension, refresh()}; the extension refreshes it after a change near the top. */
export function startProperties(page) {
  const main = document.getElementById("lr-editor");
  if (!main || !page.config.markdown) return { extension: [], refresh() {} };
  const panel = document.createElement("details");
  panel.id = "lr-properties";
  main.before(panel);
  let shown = null;

  const apply = (key, value, list) => {
    const { view, say } = page;
    if (view.state.readOnly) return say("You may only read this note.", "error");
    const change = propertyChange(view.state.doc.toString(), key, value, { list });
    if (change.refusal) return say(change.refusal, "error");
    view.dispatch({ changes: change, userEvent: "input.type" });
    return true;
  };

  const render = (matter) => {
    const editable = !page.view.state.readOnly;
    panel.replaceChildren();
    const summary = document.createElement("summary");
    summary.textContent = matter ? `Properties (${matter.fields.length})` : "Properties";
    panel.append(summary);
    const table = document.createElement("table");
    table.className = "lr-properties";
    for (const field of matter ? matter.fields : []) {
      const row = table.insertRow();
      const name = row.insertCell();
      name.textContent = field.key;
      name.className = "lr-property-key";
      const input = document.createElement("input");
      input.type = "text";
      input.value = field.value;
      input.dataset.property = field.key;
      input.setAttribute("aria-label", `Property ${field.key}${field.list ? " (comma-separated)" : ""}`);
      input.disabled = !editable || !field.editable;
      if (!field.editable) input.title = "Edit this property in the text";
      const commit = () => {
        if (input.value !== field.value) apply(field.key, input.value, field.list);
      };
      input.addEventListener("change", commit);
      input.addEventListener("keydown", (event) => event.key === "Enter" && (event.preventDefault(), input.blur()));
      row.insertCell().append(input);
    }
    panel.append(table);
    if (editable && !(matter && matter.readOnly)) {
      const add = document.createElement("form");
      add.className = "lr-property-add";
      add.innerHTML = '<input name="key" placeholder="name" aria-label="New property name"> <input name="value" placeholder="value" aria-label="New property value"> <button>Add</button>';
      add.addEventListener("submit", (event) => {
        event.preventDefault();
        if (apply(add.key.value.trim(), add.value.value, false)) add.reset();
      });
      panel.append(add);
    }
  };

  const refresh = () => {
    const text = page.view.state.doc.sliceString(0, Math.min(page.view.state.doc.length, HEAD));
    const matter = frontMatter(text);
    // Front matter longer than the panel reads (or a note opening with a rule it never closes): no panel.
    panel.hidden = !matter && OPENING.test(text.slice(0, text.indexOf("\n") >>> 0));
    if (panel.hidden) return;
    const key = JSON.stringify(matter) + page.view.state.readOnly;
    // Re-drawn only when the front matter changed, and never under the person's typing in a field.
    if (key === shown || panel.contains(document.activeElement)) return;
    shown = key;
    panel.open = panel.open || Boolean(matter);
    render(matter);
  };
  panel.addEventListener("focusout", () => setTimeout(refresh, 0));
  const extension = EditorView.updateListener.of((update) => {
    if (update.docChanged && update.changes.touchesRange(0, HEAD)) refresh();
  });
  return { extension, refresh };
}
