// Wikilinks in the editor: `[[` completes the names of the folder's notes, `[[Note#` that note's headings,
// `[[Note|` its aliases; Ctrl-click (Cmd-click on a Mac) on a link opens the note it reaches (at its heading);
// a link that reaches nothing in the folder is marked `lr-wikilink-unresolved`. Resolution follows the
// server's rules within the folder (editor/src/linkrules.js); the folder's entries come from the file tree's
// listing (`setEntries`), another note's headings and aliases from the outline endpoint
// (suggestions/review/editor_links.py).

import { autocompletion, pickedCompletion } from "@codemirror/autocomplete";
import { syntaxTree } from "@codemirror/language";
import { RangeSetBuilder, StateEffect } from "@codemirror/state";
import { Decoration, EditorView, ViewPlugin } from "@codemirror/view";
import {
  findHeading,
  headingLinkText,
  headingsOf,
  linkContext,
  linksInLine,
  linkTextFor,
  noteIndex,
  rankEntries,
  resolveLink,
} from "./linkrules.js";

// Another note's outline is fetched once per this long (its headings change as people type).
const OUTLINE_FRESH_MS = 10_000;
const MAX_OPTIONS = 100;
const CODE_NODE = /Code|Comment|HTMLBlock/;
const refreshLinks = StateEffect.define();
const MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || "");

/** The links of the editor page: `extension` for CodeMirror, `setEntries` for each tree listing,
 * `entries()` for the quick switcher. `say` writes to the page's status line. */
export function noteLinks(config, { say = () => {} } = {}) {
  let entries = null; // null until the tree's first listing: until then no link is called unresolved
  const views = new Set();
  const outlines = new Map(); // doc_id -> {at, promise}
  const where = () => {
    const own = entries && entries.find((e) => e.doc_id === config.docId);
    return { sourcePath: own ? own.path : config.path.slice(config.folder.length), folder: config.folder };
  };
  const resolve = (target) => (entries ? resolveLink(noteIndex(entries), where(), target) : null);

  /** A note's headings and aliases: the open note's headings from its text as it is now, the rest from the
   * server (the note as stored, a moment behind the typing). */
  function outlineOf(entry, view, kind) {
    if (kind === "heading" && entry.doc_id === config.docId) {
      return Promise.resolve({ headings: headingsOf(view.state.doc.toString()), aliases: [] });
    }
    const cached = outlines.get(entry.doc_id);
    if (cached && Date.now() - cached.at < OUTLINE_FRESH_MS) return cached.promise;
    const promise = fetch(config.outlineUrl.replace("DOC", encodeURIComponent(entry.doc_id)), { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : { headings: [], aliases: [] }))
      .catch(() => ({ headings: [], aliases: [] }));
    outlines.set(entry.doc_id, { at: Date.now(), promise });
    return promise;
  }

  // Names answer at once (no promise: the list does not flicker as one types); headings and aliases of
  // another note once its outline is here.
  function complete(context) {
    if (!entries || !config.outlineUrl) return null;
    const line = context.state.doc.lineAt(context.pos);
    const found = linkContext(line.text.slice(0, context.pos - line.from));
    if (!found) return null;
    const from = line.from + found.from;
    if (found.kind === "name") {
      const index = noteIndex(entries);
      const here = where();
      const options = rankEntries(found.query, entries, MAX_OPTIONS).map((entry) => {
        const text = linkTextFor(index, here, entry);
        const detail = entry.path === `/${text}.md` || entry.path === `/${text}` ? "" : entry.path;
        return { label: text, detail, type: "text", apply: closing(text) };
      });
      return { from, options, filter: false };
    }
    const entry = resolve(found.target);
    if (!entry || entry.type !== "markdown") return null;
    return outlineOf(entry, context.view, found.kind).then((outline) => (context.aborted ? null : partsOf(outline, found, from)));
  }

  function partsOf(outline, found, from) {
    const texts = found.kind === "heading"
      ? outline.headings.map((heading) => headingLinkText(heading.text)).filter(Boolean)
      : outline.aliases;
    const query = found.query.trim().toLowerCase();
    const options = [...new Set(texts)]
      .filter((text) => !query || text.toLowerCase().includes(query))
      .slice(0, MAX_OPTIONS)
      .map((text) => ({ label: text, type: found.kind === "heading" ? "keyword" : "text", apply: closing(text) }));
    return { from, options, filter: false };
  }

  /** Ctrl/Cmd-click: open what the link under the pointer reaches, at its heading. */
  function follow(event, view) {
    if (event.button !== 0 || !(MAC ? event.metaKey : event.ctrlKey)) return false;
    const pos = view.posAtCoords({ x: event.clientX, y: event.clientY });
    if (pos === null) return false;
    const line = view.state.doc.lineAt(pos);
    const link = linksInLine(line.text).find((l) => line.from + l.from <= pos && pos <= line.from + l.to);
    if (!link) return false;
    event.preventDefault();
    const entry = resolve(link.target);
    if (!entry) {
      say(`No note “${link.target}” in ${config.folder}.`, "error");
      return true;
    }
    open(view, entry, link.heading);
    return true;
  }

  async function open(view, entry, heading) {
    if (!entry.url) return;
    if (!heading) return void (location.href = entry.url);
    if (entry.doc_id === config.docId) {
      const found = findHeading(headingsOf(view.state.doc.toString()), heading);
      if (!found) return say(`No heading “${heading}” in this note.`, "error");
      const at = view.state.doc.line(found.line).from;
      view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
      return view.focus();
    }
    const found = findHeading((await outlineOf(entry, view, "heading")).headings, heading);
    location.href = found ? `${entry.url}#L${found.line}` : entry.url;
  }

  const marks = ViewPlugin.fromClass(
    class {
      constructor(view) {
        views.add(view);
        this.decorations = this.build(view);
      }
      update(update) {
        const asked = update.transactions.some((tr) => tr.effects.some((e) => e.is(refreshLinks)));
        if (update.docChanged || update.viewportChanged || asked) this.decorations = this.build(update.view);
      }
      destroy() {
        views.delete(this.view);
      }
      build(view) {
        this.view = view;
        const builder = new RangeSetBuilder();
        if (!entries) return builder.finish();
        const tree = syntaxTree(view.state);
        const inCode = (pos) => {
          for (let node = tree.resolveInner(pos, 1); node; node = node.parent) if (CODE_NODE.test(node.name)) return true;
          return false;
        };
        let lastLine = -1;
        for (const { from, to } of view.visibleRanges) {
          for (let pos = from; pos <= to; ) {
            const line = view.state.doc.lineAt(pos);
            if (line.number > lastLine) {
              lastLine = line.number;
              for (const link of linksInLine(line.text)) {
                const start = line.from + link.from;
                if (inCode(start + 2)) continue;
                builder.add(start, line.from + link.to, markFor(resolve(link.target), link, config.folder));
              }
            }
            pos = line.to + 1;
          }
        }
        return builder.finish();
      }
    },
    { decorations: (plugin) => plugin.decorations },
  );

  return {
    entries: () => entries || [],
    resolve,
    setEntries(list) {
      entries = list;
      outlines.clear();
      for (const view of views) view.dispatch({ effects: refreshLinks.of(null) });
    },
    extension: [
      autocompletion({ override: [complete], icons: false }),
      marks,
      EditorView.domEventHandlers({ mousedown: follow }),
    ],
  };
}

function markFor(entry, link, folder) {
  const key = MAC ? "⌘-click" : "Ctrl-click";
  if (!entry) {
    return Decoration.mark({
      class: "lr-wikilink lr-wikilink-unresolved",
      attributes: { title: `No note “${link.target}” in ${folder}`, "data-link": link.target },
    });
  }
  return Decoration.mark({
    class: "lr-wikilink",
    attributes: { title: `${key} opens ${folder}${entry.path}`, "data-link": link.target },
  });
}

/** Inserts the completed part and closes the link, unless `]]` already follows. */
function closing(text) {
  return (view, completion, from, to) => {
    const close = view.state.sliceDoc(to, to + 2) === "]]" ? "" : "]]";
    view.dispatch({
      changes: { from, to, insert: text + close },
      selection: { anchor: from + text.length + 2 },
      userEvent: "input.complete",
      annotations: pickedCompletion.of(completion),
    });
  };
}
