// The quick switcher: Ctrl-O (Cmd-O on a Mac), or the tree's "Find" button, opens a small dialog over the
// folder's notes and files; typing filters them (linkrules.js's rankEntries: the letters in order, the
// name before the directories), Up/Down choose, Enter opens the chosen one in the editor, Escape closes.

import { rankEntries } from "./linkrules.js";

const SHOWN = 30;
const MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || "");

/** `entries()`: the folder's current listing (the file tree's); `currentDocId`: the open note, listed last. */
export function startSwitcher({ entries, currentDocId }) {
  let dialog = null;
  let shown = [];
  let chosen = 0;
  let returnFocus = null;

  function build() {
    const backdrop = document.createElement("div");
    backdrop.id = "lr-switcher";
    backdrop.hidden = true;
    backdrop.innerHTML = `
      <div class="lr-switcher-box" role="dialog" aria-modal="true" aria-label="Open a note">
        <input type="text" role="combobox" aria-autocomplete="list" aria-expanded="true"
          aria-controls="lr-switcher-list" aria-label="Name of the note to open" placeholder="Type part of a note's name"
          autocomplete="off" spellcheck="false">
        <ul id="lr-switcher-list" role="listbox" aria-label="Notes"></ul>
        <p class="lr-switcher-help">↑ ↓ choose · Enter open · Esc close</p>
      </div>`;
    document.body.append(backdrop);
    const input = backdrop.querySelector("input");
    input.addEventListener("input", () => fill(input.value));
    input.addEventListener("keydown", onKey);
    backdrop.addEventListener("mousedown", (event) => {
      if (event.target === backdrop) close();
    });
    backdrop.querySelector("ul").addEventListener("click", (event) => {
      const item = event.target.closest("li[data-index]");
      if (item) go(Number(item.dataset.index));
    });
    return { backdrop, input, list: backdrop.querySelector("ul") };
  }

  function fill(query) {
    const ranked = rankEntries(query, entries(), SHOWN + 1);
    // With nothing typed, the note already open is the least likely wish: list it last.
    shown = query.trim() ? ranked : [...ranked.filter((e) => e.doc_id !== currentDocId), ...ranked.filter((e) => e.doc_id === currentDocId)];
    shown = shown.filter((entry) => entry.url).slice(0, SHOWN);
    chosen = 0;
    dialog.list.replaceChildren(
      ...shown.map((entry, i) => {
        const item = document.createElement("li");
        item.id = `lr-switcher-${i}`;
        item.setAttribute("role", "option");
        item.dataset.index = String(i);
        item.dataset.path = entry.path;
        const name = document.createElement("span");
        name.className = "lr-switcher-name";
        name.textContent = entry.path.slice(entry.path.lastIndexOf("/") + 1).replace(/\.md$/i, "");
        const where = document.createElement("span");
        where.className = "lr-switcher-path";
        where.textContent = entry.path;
        item.append(name, where);
        return item;
      }),
    );
    if (!shown.length) {
      const none = document.createElement("li");
      none.className = "lr-switcher-none";
      none.textContent = "No note matches.";
      dialog.list.append(none);
    }
    choose(0);
  }

  function choose(index) {
    if (!shown.length) return dialog.input.removeAttribute("aria-activedescendant");
    chosen = (index + shown.length) % shown.length;
    for (const item of dialog.list.querySelectorAll("li[data-index]")) {
      item.setAttribute("aria-selected", String(Number(item.dataset.index) === chosen));
    }
    dialog.input.setAttribute("aria-activedescendant", `lr-switcher-${chosen}`);
    document.getElementById(`lr-switcher-${chosen}`)?.scrollIntoView({ block: "nearest" });
  }

  function onKey(event) {
    if (event.key === "ArrowDown") choose(chosen + 1);
    else if (event.key === "ArrowUp") choose(chosen - 1);
    else if (event.key === "Enter") go(chosen);
    else if (event.key === "Escape") close();
    else return;
    event.preventDefault();
  }

  function go(index) {
    const entry = shown[index];
    if (!entry) return;
    close();
    location.href = entry.url;
  }

  function open() {
    dialog = dialog || build();
    if (!dialog.backdrop.hidden) return dialog.input.focus();
    returnFocus = document.activeElement;
    dialog.backdrop.hidden = false;
    dialog.input.value = "";
    fill("");
    dialog.input.focus();
  }

  function close() {
    if (!dialog || dialog.backdrop.hidden) return;
    dialog.backdrop.hidden = true;
    if (returnFocus && returnFocus.focus) returnFocus.focus();
  }

  // Capture: the browser's own Ctrl-O (open a file) and the editor's keymap never see it.
  document.addEventListener(
    "keydown",
    (event) => {
      const mod = MAC ? event.metaKey && !event.ctrlKey : event.ctrlKey && !event.metaKey;
      if (!mod || event.altKey || event.shiftKey || event.key.toLowerCase() !== "o") return;
      event.preventDefault();
      event.stopPropagation();
      open();
    },
    true,
  );
  document.querySelector("[data-tree=find]")?.addEventListener("click", open);
  return { open, close };
}
