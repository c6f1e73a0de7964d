// The file tree beside the editor: the folder's entries, open one, new note, new folder, rename/move,
// delete to trash. Each action posts to the server, which calls the vault's services (links rewritten,
// every client follows through the folder document). The tree follows the folder document itself: any
// change to it (another browser, an assistant, the admin, a Relay client) reloads the listing, and
// `onEntries` hears every listing (the page's title follows its note), `onFolder` gets the folder document.

import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import { postForm } from "./http.js";

// The listing is read from the database, which mirrors the folder document a moment after it changes:
// read soon, and once more a little later.
const RELOAD_AFTER_MS = [150, 900];

export function startFileTree(config, { onEntries = () => {}, onFolder = () => {} } = {}) {
  const panel = document.getElementById("lr-tree");
  if (!panel || !config.treeUrl) return;
  const list = panel.querySelector("ul");
  const status = document.getElementById("lr-status");
  const say = (message, level) => {
    status.textContent = message;
    status.dataset.level = level;
  };

  async function load() {
    const response = await fetch(config.treeUrl, { credentials: "same-origin" });
    if (!response.ok) return say(`The file tree could not load (${response.status}).`, "error");
    const tree = await response.json();
    list.replaceChildren();
    for (const entry of tree.entries) {
      const item = document.createElement("li");
      item.className = `lr-entry lr-${entry.type}`;
      item.style.paddingLeft = `${(entry.path.split("/").length - 2) * 12 + 4}px`;
      item.dataset.path = entry.path;
      const name = entry.path.split("/").pop();
      if (entry.url) {
        const link = document.createElement("a");
        link.href = entry.url;
        link.textContent = name;
        if (entry.doc_id === config.docId) link.setAttribute("aria-current", "page");
        item.append(link);
      } else {
        const label = document.createElement("span");
        label.textContent = `${name}/`;
        item.append(label);
      }
      if (config.canEdit) {
        for (const [action, text, title] of [
          ["rename", "✎", "Rename or move"],
          ["trash", "✕", "Move to trash"],
        ]) {
          const button = document.createElement("button");
          button.type = "button";
          button.className = `lr-tree-${action}`;
          button.textContent = text;
          button.title = `${title} ${entry.path}`;
          button.setAttribute("aria-label", `${title} ${entry.path}`);
          button.addEventListener("click", () => act(action, entry));
          item.append(button);
        }
      }
      list.append(item);
    }
    onEntries(tree.entries);
  }

  function follow() {
    if (!config.folderDocId) return;
    const ydoc = new Y.Doc();
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const provider = new WebsocketProvider(`${scheme}//${location.host}/d/${config.folderDocId}/ws`, config.folderDocId, ydoc);
    provider.awareness.setLocalState(null); // reading the tree is not being here
    onFolder(ydoc);
    let timers = [];
    ydoc.on("update", () => {
      for (const timer of timers) clearTimeout(timer);
      timers = RELOAD_AFTER_MS.map((ms) => setTimeout(load, ms));
    });
  }

  async function act(action, entry) {
    let answer;
    if (action === "rename") {
      const target = window.prompt(`New path for ${entry.path}:`, entry.path);
      if (!target || target === entry.path) return;
      answer = await postForm(config.treeActionUrl, { action: "move", path: entry.path, new_path: target });
    } else if (action === "trash") {
      if (!window.confirm(`Move ${entry.path} to the trash?`)) return;
      answer = await postForm(config.treeActionUrl, { action: "trash", path: entry.path });
    } else {
      const path = window.prompt(action === "note" ? "Path of the new note:" : "Path of the new folder:", "/");
      if (!path) return;
      answer = await postForm(config.treeActionUrl, { action, path });
    }
    say(answer.message || answer.reason || "", answer.ok ? "success" : "error");
    if (answer.ok && answer.open) return void (location.href = answer.open);
    await load();
  }

  panel.querySelector("[data-tree=note]")?.addEventListener("click", () => act("note"));
  panel.querySelector("[data-tree=folder]")?.addEventListener("click", () => act("folder"));
  load();
  follow();
}
