// Wikilinks in the editor: `[[` completes the names of the folder's notes (then the other folders'),
// `[[Note#` that note's headings, `[[Note|` its aliases; Ctrl-click (Cmd-click on a Mac) on a link opens the
// note it reaches (at its heading), in this folder or another; a link that reaches nothing is marked
// `lr-wikilink-unresolved`, one into another folder `lr-wikilink-elsewhere`. Resolution follows the server's
// rules (editor/src/linkrules.js); the folder's entries come from the file tree's listing (`setEntries`),
// the other folders' from their listing (suggestions/review/editor_links.py), asked for only once a link
// needs them, another note's headings and aliases from the outline endpoint of its folder.

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
  linkTextElsewhere,
  linkTextFor,
  noteIndex,
  otherFolders,
  rankEntries,
  reachesOtherFolders,
  resolveLink,
} from "./linkrules.js";

// Another note's outline is fetched once per this long (its headings change as people type).
const OUTLINE_FRESH_MS = 10_000;
// The other folders' listing is large and changes seldom: asked again at most this often, and only while a
// link reaches nothing without a newer one.
const OTHERS_FRESH_MS = 30_000;
const MAX_OPTIONS = 100;
const CODE_NODE = /Code|Comment|HTMLBlock/;
const refreshLinks = StateEffect.define();
const MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || "");

/** The links of the editor page: `extension` for CodeMirror, `setEntries` for each tree listing,
 * `entries()` for the quick switcher, `resolve` (within the folder) for the embeds. `say` writes to the
 * page's status line. */
export function noteLinks(config, { say = () => {} } = {}) {
  let entries = null; // null until the tree's first listing: until then no link is called unresolved
  const views = new Set();
  const outlines = new Map(); // doc_id -> {at, promise}
  let others = null; // {vault, ranked} once the other folders were listed
  let othersAsked = -Infinity;
  let othersListed = Promise.resolve();
  const where = () => {
    const own = entries && entries.find((e) => e.doc_id === config.docId);
    return { sourcePath: own ? own.path : config.path.slice(config.folder.length), folder: config.folder };
  };
  const resolve = (target) => (entries ? resolveLink(noteIndex(entries), where(), target) : null);

  /** What a link reaches in any folder the editor knows; asks for the other folders when the answer
   * depends on them and they are unknown, or it reaches nothing (the listing may be older than the note). */
  function resolveAnywhere(target) {
    if (!entries) return null;
    const [index, here] = [noteIndex(entries), where()];
    const found = resolveLink(index, here, target, others ? others.vault : undefined);
    if ((!others || !found) && reachesOtherFolders(index, here, target)) listOthers();
    return found;
  }

  function listOthers() {
    if (!config.otherFoldersUrl || Date.now() - othersAsked < OTHERS_FRESH_MS) return othersListed;
    othersAsked = Date.now();
    othersListed = fetch(config.otherFoldersUrl, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : null))
      .then((listing) => {
        if (!listing) return;
        others = elsewhere(listing);
        refresh();
      })
      .catch(() => {});
    return othersListed;
  }

  const refresh = () => {
    for (const view of views) view.dispatch({ effects: refreshLinks.of(null) });
  };

  /** A note's headings and aliases: the open note's headings from its text as it is now, the rest from the
   * server (the note as stored, a moment behind the typing). */
  function outlineOf(entry, view, kind) {
    if (kind === "heading" && entry.doc_id === config.docId) {
      return Promise.resolve({ headings: headingsOf(view.state.doc.toString()), aliases: [] });
    }
    const cached = outlines.get(entry.doc_id);
    if (cached && Date.now() - cached.at < OUTLINE_FRESH_MS) return cached.promise;
    const url = (entry.outlineUrl || config.outlineUrl).replace("DOC", encodeURIComponent(entry.doc_id));
    const promise = fetch(url, { credentials: "same-origin" })
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
      const own = namesHere(found.query);
      const withOthers = () => {
        const options = [...own, ...namesElsewhere(found.query, MAX_OPTIONS - own.length)];
        return { from, options, filter: false };
      };
      // A path may name another folder, and a name not found here may be there.
      if (!others && (found.query.includes("/") || !own.length)) {
        return listOthers().then(() => (context.aborted ? null : withOthers()));
      }
      return withOthers();
    }
    const entry = resolveAnywhere(found.target);
    if (!entry || entry.type !== "markdown") return null;
    return outlineOf(entry, context.view, found.kind).then((outline) => (context.aborted ? null : partsOf(outline, found, from)));
  }

  function namesHere(query) {
    const [index, here] = [noteIndex(entries), where()];
    return rankEntries(query, entries, MAX_OPTIONS).map((entry) => {
      const text = linkTextFor(index, here, entry);
      const detail = entry.path === `/${text}.md` || entry.path === `/${text}` ? "" : entry.path;
      return { label: text, detail, type: "text", apply: closing(text) };
    });
  }

  // After this folder's names: the other folders' notes, written from the vault's root.
  function namesElsewhere(query, limit) {
    if (!others || limit <= 0) return [];
    const [index, here] = [noteIndex(entries), where()];
    return rankEntries(query, others.ranked, limit).map(({ entry }) => {
      const text = linkTextElsewhere(index, here, others.vault, entry, entry.folder);
      return { label: text, type: "text", apply: closing(text) };
    });
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
    openLink(view, link);
    return true;
  }

  async function openLink(view, link) {
    let entry = resolveAnywhere(link.target);
    if (!entry) {
      await othersListed; // a click before the other folders were listed
      entry = resolveAnywhere(link.target);
    }
    if (!entry) return say(`${nowhere(link)}.`, "error");
    open(view, entry, link.heading);
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
                builder.add(start, line.from + link.to, markFor(resolveAnywhere(link.target), link, config.folder));
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
      refresh();
    },
    extension: [
      autocompletion({ override: [complete], icons: false }),
      marks,
      EditorView.domEventHandlers({ mousedown: follow }),
    ],
  };
}

/** The other folders' listing as the rules index it, and as names to complete (`/Folder/path`), each entry
 * knowing its folder, editor page and outline URL. */
function elsewhere({ editorUrl, folders }) {
  const listed = folders.map((folder) => ({
    name: folder.name,
    entries: folder.entries.map((entry) => ({
      ...entry,
      folder: folder.name,
      url: editorUrl.replace("DOC", encodeURIComponent(entry.doc_id)),
      outlineUrl: folder.outlineUrl,
    })),
  }));
  const ranked = listed.flatMap((folder) =>
    folder.entries.map((entry) => ({ path: `/${folder.name}${entry.path}`, type: entry.type, entry })),
  );
  return { vault: otherFolders(listed), ranked };
}

const nowhere = (link) => `No note “${link.target}” in the folders you can see`;

function markFor(entry, link, folder) {
  const key = MAC ? "⌘-click" : "Ctrl-click";
  if (!entry) {
    return Decoration.mark({
      class: "lr-wikilink lr-wikilink-unresolved",
      attributes: { title: nowhere(link), "data-link": link.target },
    });
  }
  return Decoration.mark({
    class: entry.folder ? "lr-wikilink lr-wikilink-elsewhere" : "lr-wikilink",
    attributes: { title: `${key} opens ${entry.folder || folder}${entry.path}`, "data-link": link.target },
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
