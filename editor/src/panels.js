// The Outline and Backlinks panels, under the file tree (so a phone has them in its drawer). The outline is
// the note's headings, read again a moment after the text changes; a click puts the cursor on the heading.
// Backlinks are the notes of the folder that link here, as the folder document's `backlinks_v0` says (the
// server keeps it, as Relay clients read it): nothing is asked of the server beyond what the tree holds.

import { headingsOf } from "./linkrules.js";

const OUTLINE_AFTER_MS = 300;
const UUID_LENGTH = 36;

/** The paths of the notes linking to the entry `uuid`, from a folder document's maps (Y.Map-like, or plain
 * objects in tests): `backlinks_v0` target uuid -> source uuids, `filemeta_v0` path -> {id}. Sorted. */
export function backlinksOf(backlinks, filemeta, uuid) {
  const sources = backlinks.get(uuid);
  const wanted = new Set(sources && typeof sources.toArray === "function" ? sources.toArray() : sources || []);
  const paths = [];
  for (const [path, meta] of filemeta.entries()) {
    const id = meta && typeof meta.get === "function" ? meta.get("id") : meta && meta.id;
    if (wanted.has(id)) paths.push(path);
  }
  return paths.sort();
}

function section(id, title) {
  const box = document.createElement("details");
  box.id = id;
  box.className = "lr-panel";
  box.open = true;
  const summary = document.createElement("summary");
  summary.textContent = title;
  const list = document.createElement("ul");
  box.append(summary, list);
  return { box, summary, list, title };
}

function fill(part, items, empty) {
  part.summary.textContent = `${part.title} (${items.length})`;
  part.list.replaceChildren(...(items.length ? items : [Object.assign(document.createElement("li"), { className: "lr-panel-empty", textContent: empty })]));
}

/** {noteChanged(), folderDoc(ydoc), entries(list)}: the page calls these as the note, the folder document
 * and the tree's listing change. */
export function startPanels(page) {
  const tree = document.getElementById("lr-tree");
  if (!tree || !page.config.markdown) return { noteChanged() {}, folderDoc() {}, entries() {} };
  const outline = section("lr-outline", "Outline");
  const linked = section("lr-backlinks", "Backlinks");
  tree.append(outline.box, linked.box);
  const myUuid = page.config.docId.slice(-UUID_LENGTH);
  let timer = null;
  let folder = null;
  let listing = [];

  const drawOutline = () => {
    timer = null;
    if (!page.view) return;
    const doc = page.view.state.doc;
    const items = headingsOf(doc.toString()).map(({ level, text, line }) => {
      const item = document.createElement("li");
      item.style.paddingLeft = `${(level - 1) * 10}px`;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "lr-outline-heading";
      button.textContent = text || "(untitled)";
      button.addEventListener("click", () => {
        if (line > page.view.state.doc.lines) return;
        const at = page.view.state.doc.line(line).from;
        page.view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
        page.view.focus();
      });
      item.append(button);
      return item;
    });
    fill(outline, items, "No headings.");
  };

  const drawBacklinks = () => {
    if (!folder) return;
    const paths = backlinksOf(folder.getMap("backlinks_v0"), folder.getMap("filemeta_v0"), myUuid);
    const items = paths.map((path) => {
      const item = document.createElement("li");
      const entry = listing.find((e) => e.path === path);
      const name = path.replace(/^\//, "");
      if (entry && entry.url) {
        const link = document.createElement("a");
        link.href = entry.url;
        link.textContent = name;
        item.append(link);
      } else item.textContent = name;
      return item;
    });
    fill(linked, items, "No note links here.");
  };

  return {
    noteChanged() {
      if (timer === null) timer = setTimeout(drawOutline, OUTLINE_AFTER_MS);
    },
    folderDoc(ydoc) {
      folder = ydoc;
      ydoc.on("update", drawBacklinks);
      drawBacklinks();
    },
    entries(list) {
      listing = list;
      drawBacklinks();
    },
  };
}
