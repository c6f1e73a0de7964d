// The editor page of Lens Relay: CodeMirror 6 bound to the document's Y.Text("contents") over the relay's
// own /d/<id>/ws route (the Django session authenticates the socket: no token in the page), presence,
// and the assistants' CriticMarkup suggestions shown as tracked changes with Accept / Reject inline; comment
// threads in the Comments panel beside it (editor/src/threads.js).
// Everything the page needs from the server comes in the JSON config the template writes.

import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import { yCollab, ySyncAnnotation } from "y-codemirror.next";
import { EditorState, Compartment, Transaction, ChangeSet } from "@codemirror/state";
import {
  EditorView,
  keymap,
  lineNumbers,
  drawSelection,
  highlightActiveLine,
  highlightSpecialChars,
} from "@codemirror/view";
import { defaultKeymap } from "@codemirror/commands";
import { search, searchKeymap } from "@codemirror/search";
import { markdown } from "@codemirror/lang-markdown";
import { syntaxHighlighting } from "@codemirror/language";
import { authorship, authorshipTheme, registerAuthor } from "./authorship.js";
import { assistantLabelCss, publishOwnColour, roomColours } from "./colours.js";
import { fileEmbeds } from "./embeds.js";
import { startDrawers } from "./drawers.js";
import { startFileTree } from "./filetree.js";
import { postForm } from "./http.js";
import { noteLinks } from "./links.js";
import { livePreview } from "./preview.js";
import { startPanels } from "./panels.js";
import { startProperties } from "./properties.js";
import { Reviser, revisingFilter } from "./revising.js";
import { suggest, suggestEach } from "./suggesting.js";
import { startSwitcher } from "./switcher.js";
import { startThreads } from "./threads.js";
import { pageHighlight } from "./theme.js";
import { trackedChanges, setView, setPending } from "./tracked.js";

// One colour per person and assistant, the one each publishes (colours.js); the assistants' cursor labels
// move below their line, off their suggestion's author label.
const labelStyle = document.createElement("style");
const colours = roomColours({ onAssistants: (list) => (labelStyle.textContent = assistantLabelCss(list)) });
const colorOf = colours.colourOf;

// -- the page ---------------------------------------------------------------------------------------------

function start() {
  const page = openPage();
  page.links = noteLinks(page.config, { say: page.say });
  page.embeds = fileEmbeds(page.config, { resolve: page.links.resolve, say: page.say });
  page.panels = startPanels(page);
  startFileTree(page.config, {
    onEntries: (entries) => {
      followPath(page, entries);
      page.links.setEntries(entries);
      page.panels.entries(entries);
      if (page.view) page.embeds.refresh(page.view);
    },
    onFolder: (ydoc) => page.panels.folderDoc(ydoc),
  });
  startSwitcher({ entries: page.links.entries, currentDocId: page.config.docId });
  startDrawers();
  if (!page.config.text) return; // a binary file: the template shows its preview or download
  connect(page);
  page.users = registerAuthor(page.ydoc, page.provider, page.config.user, {
    write: page.config.canEdit || page.config.suggestOnly,
  });
  page.authors = authorship({ ytext: page.ytext, users: page.users, colourOf: colorOf });
  page.preview = livePreview();
  page.properties = startProperties(page);
  const review = new Review(page);
  page.view = createEditor(page, review);
  page.properties.refresh();
  page.panels.noteChanged();
  window.lensEditor = { view: page.view, ydoc: page.ydoc, ytext: page.ytext, provider: page.provider };
  bindDecisionControls(page, review);
  bindViewSwitch(page);
  bindAuthorship(page);
  bindPreview(page);
  bindBulkAndUndo(review);
  followPending(page, review);
  showPresence(page);
  showConnection(page);
  openAtSuggestion(page);
  openAtLine(page);
  bindSuggesting(page);
  followThreads(page);
}

/** The heading, breadcrumb and title follow the note's path; a note gone from the tree says so. */
function followPath(page, entries) {
  const { config } = page;
  const entry = entries.find((e) => e.doc_id === config.docId);
  const notice = document.getElementById("lr-gone");
  notice.hidden = Boolean(entry);
  if (!entry) return;
  const path = `${config.folder}${entry.path}`;
  if (path === config.path) return;
  config.path = path;
  for (const element of document.querySelectorAll(".editor-path, #lr-crumb-path")) element.textContent = path;
  document.title = document.title.replace(/^Edit .*? \|/, `Edit ${path} |`);
}

/** The page's config (written by the template), its editor element and the status line. */
function openPage() {
  const status = document.getElementById("lr-status");
  return {
    config: JSON.parse(document.getElementById("lr-editor-config").textContent),
    root: document.getElementById("lr-editor"),
    say(message, level = "info") {
      status.textContent = message;
      status.dataset.level = level;
    },
  };
}

/** The document's Yjs text over the relay's socket, with this person in its awareness. */
function connect(page) {
  const { config } = page;
  page.ydoc = new Y.Doc();
  page.ytext = page.ydoc.getText("contents");
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  page.suggesting = Boolean(config.suggestOnly);
  page.provider = new WebsocketProvider(`${scheme}//${location.host}${config.wsPath}`, config.docId, page.ydoc, {
    params: page.suggesting ? { suggesting: "1" } : {},
  });
  // The server refused an update (this page checks first, so only a rule it did not know): say why, and
  // load the note again so what is shown is what everyone has.
  page.provider.messageHandlers[2] = (_encoder, decoder) => {
    decoder.pos += 1; // the auth message's kind: permission denied
    const length = readLength(decoder);
    const reason = new TextDecoder().decode(decoder.arr.subarray(decoder.pos, decoder.pos + length));
    decoder.pos += length;
    page.say(`Not applied: ${reason}. Reloading the note…`, "error");
    setTimeout(() => location.reload(), 1500);
  };
  document.head.append(labelStyle);
  page.awareness = colours.awareness(page.provider.awareness);
  publishOwnColour(page.provider.awareness, config.user);
  colours.seat(page.provider.awareness.getStates());
}

function readLength(decoder) {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = decoder.arr[decoder.pos++];
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value;
  }
}

/** In suggesting mode, a person's typing and deleting become their suggestion (editor/src/suggesting.js). */
function suggestingFilter(page) {
  const me = { id: page.config.userId, name: page.config.user };
  return EditorState.transactionFilter.of((tr) => {
    if (!page.suggesting || !tr.docChanged || tr.annotation(ySyncAnnotation)) return tr;
    const pieces = [];
    tr.changes.iterChanges((from, to, _fromB, _toB, inserted) => pieces.push({ from, to, inserted: inserted.toString() }));
    if (pieces.length > 1 && tr.isUserEvent("input.replace")) return suggestedEach(page, tr, pieces, me);
    if (!(tr.isUserEvent("input") || tr.isUserEvent("delete")) || pieces.length !== 1) {
      page.say("In suggesting mode, type or delete in one place at a time.", "error");
      return [];
    }
    const [{ from, to, inserted }] = pieces;
    const made = suggest(tr.startState.doc.toString(), from, to, inserted, me, {
      forward: tr.isUserEvent("delete.forward"),
      parse: tr.startState.field(page.field).parse, // already read (tracked.js): not scanned again per key
    });
    if (made.refusal) {
      page.say(made.refusal, "error");
      return [];
    }
    return {
      changes: made.edits,
      selection: { anchor: made.cursor },
      scrollIntoView: true,
      annotations: Transaction.userEvent.of(tr.annotation(Transaction.userEvent)),
    };
  });
}

/** Replace all in suggesting mode: each replacement its own suggestion, made one after the other (a rare
 * command, so the note is read again for each, unlike a keystroke). */
function suggestedEach(page, tr, pieces, me) {
  const made = suggestEach(tr.startState.doc.toString(), pieces, me);
  if (made.refusal) {
    page.say(made.refusal, "error");
    return [];
  }
  let changes = ChangeSet.empty(tr.startState.doc.length);
  for (const edits of made.steps) changes = changes.compose(ChangeSet.of(edits, changes.newLength));
  return {
    changes,
    selection: { anchor: made.cursor },
    scrollIntoView: true,
    annotations: Transaction.userEvent.of(tr.annotation(Transaction.userEvent)),
  };
}

/** The Suggesting toggle: the socket joins again in the chosen mode (the server enforces it). */
function bindSuggesting(page) {
  const toggle = document.getElementById("lr-suggesting");
  if (!toggle) return;
  toggle.checked = page.suggesting;
  toggle.addEventListener("change", () => {
    if (page.config.suggestOnly) return void (toggle.checked = true);
    page.suggesting = toggle.checked;
    page.provider.params = page.suggesting ? { suggesting: "1" } : {};
    page.provider.disconnect();
    page.provider.connect();
    page.say(page.suggesting ? "Suggesting: what you type becomes a suggestion under your name." : "Editing: what you type changes the note.");
  });
}

/** The suggestions (changes with an id) in the note as the editor now shows it. */
function suggestionsIn(page) {
  return page.view.state.field(page.field).changes.filter((c) => c.id);
}

/** The note typed for a suggestion in its inline field, if any. */
function noteFor(root, uid) {
  const input = [...root.querySelectorAll("input.lr-note")].find((field) => field.dataset.suggestion === uid);
  return input ? input.value.trim() : "";
}

// Deciding from the page: one suggestion, all of them, and undoing the last decision taken here. The pending
// rows (their proposed hunks) tell a stale suggestion from a fresh one; they are fetched again after every
// decision and whenever the note's suggestions change.
class Review {
  constructor(page) {
    this.page = page;
    this.pending = new Map();
    this.lastDecided = null;
    this.refreshing = null;
    this.undoButton = document.getElementById("lr-undo");
    this.pendingCount = document.getElementById("lr-pending");
  }

  remember(uid, batch) {
    this.lastDecided = { uid, batch };
    this.undoButton.hidden = false;
  }

  /** `revision`: accept with changes, the inserted text of each part of the suggestion (revising.js). */
  async decide(uid, decision, note = "", revision = null) {
    const { config, say } = this.page;
    if (!config.canReview) return say("Deciding needs the permission to review suggestions.", "error");
    say(`${{ accept: "Accepting", reject: "Rejecting", clean_up: "Cleaning up" }[decision]}…`);
    const fields = revision ? { decision, note, revision } : { decision, note };
    const answer = await postForm(config.decideUrl.replace("UID", uid), fields);
    if (answer.ok && decision !== "clean_up") {
      this.remember(uid, false);
      say(answer.message || `${decision}ed`, "success");
    } else if (!answer.ok) say(answer.reason || answer.message || "refused", "error");
    else say(answer.message, "success");
    this.refresh();
    return answer;
  }

  /** Accept all / Reject all, confirmed first. */
  async decideAll(accept) {
    const { config, say } = this.page;
    const count = this.pending.size;
    if (!count || !window.confirm(count === 1
      ? `${accept ? "Accept" : "Reject"} the pending suggestion of this note?`
      : `${accept ? "Accept" : "Reject"} all ${count} pending suggestions of this note?`)) return;
    say(`${accept ? "Accepting" : "Rejecting"} all…`);
    const answer = await postForm(config.decideAllUrl, { decision: accept ? "accept" : "reject" });
    say(answer.message || answer.reason || "", answer.ok ? "success" : "error");
    // A bulk decision is undone as a whole: the undo endpoint takes any of its suggestions.
    if (answer.decided && answer.decided.length) this.remember(answer.decided[0], true);
    this.refresh();
  }

  /** Undo the last decision taken on this page. */
  async undo() {
    const { config, say } = this.page;
    if (!this.lastDecided) return;
    const { uid, batch } = this.lastDecided;
    const answer = await postForm(config.undoUrl.replace("UID", uid), batch ? { batch: "1" } : {});
    say(answer.message || answer.reason || (answer.ok ? "undone" : "refused"), answer.ok ? "success" : "error");
    if (answer.ok) (this.lastDecided = null), (this.undoButton.hidden = true);
    this.refresh();
  }

  refresh() {
    if (this.refreshing) return this.refreshing;
    const { config, view } = this.page;
    this.refreshing = (async () => {
      try {
        const response = await fetch(config.pendingUrl, { credentials: "same-origin" });
        if (!response.ok) return;
        const rows = await response.json();
        this.pending = new Map(rows.pending.map((row) => [row.uid, row]));
        this.pendingCount.textContent = String(this.pending.size);
        for (const button of document.querySelectorAll("button[data-all]")) button.disabled = !this.pending.size || !config.canReview;
        view.dispatch({ effects: setPending.of(this.pending) });
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }
}

/** CodeMirror on the Yjs text, with the tracked changes and the review keys (Alt-N/P/A/R). */
function createEditor(page, review) {
  const { config } = page;
  page.field = trackedChanges(config.canReview);
  page.readOnly = new Compartment();
  const language = config.markdown ? [markdown(), syntaxHighlighting(pageHighlight)] : [];
  const keys = reviewKeys(page, review);
  return new EditorView({
    parent: page.root,
    state: EditorState.create({
      doc: page.ytext.toString(),
      extensions: [
        lineNumbers(),
        highlightSpecialChars(),
        drawSelection(),
        highlightActiveLine(),
        EditorView.lineWrapping,
        language,
        config.markdown ? page.links.extension : [],
        config.markdown ? page.preview.extension : [],
        page.properties.extension,
        EditorView.updateListener.of((update) => update.docChanged && page.panels.noteChanged()),
        page.embeds.extension,
        page.field,
        page.authors.extension,
        authorshipTheme,
        page.readOnly.of([EditorState.readOnly.of(!config.canEdit && !config.suggestOnly), EditorView.editable.of(true)]),
        suggestingFilter(page),
        config.canReview ? revisingFilter(page, new Reviser(page, review)) : [],
        // The Comment button follows the selection: one comparison per change of it, nothing more.
        EditorView.updateListener.of((update) => {
          if (update.selectionSet && page.threads) page.threads.selectionChanged(update.state.selection.main.empty);
        }),
        keymap.of([
          { key: "Mod-Alt-m", run: () => Boolean(page.threads && page.threads.openNew()) },
          { key: "Alt-n", run: () => keys.focusChange(1) },
          { key: "Alt-p", run: () => keys.focusChange(-1) },
          { key: "Alt-a", run: () => keys.decideAtCursor("accept") },
          { key: "Alt-r", run: () => keys.decideAtCursor("reject") },
          ...searchKeymap,
          ...defaultKeymap,
        ]),
        // Find and replace (Ctrl-F / ⌘-F): a replacement is typing like any other, so in suggesting mode it
        // goes through suggestingFilter and becomes a suggestion.
        search({ top: true }),
        yCollab(page.ytext, page.awareness),
      ],
    }),
  });
}

/** Moving between suggestions and deciding the one at the cursor. */
function reviewKeys(page, review) {
  const { say } = page;
  let current = 0;
  const focusChange = (direction) => {
    const changes = suggestionsIn(page);
    if (!changes.length) return say("No suggestions in this note.");
    const view = page.view;
    const head = view.state.selection.main.head;
    let target;
    if (direction > 0) target = changes.find((c) => c.from > head) || changes[0];
    else target = [...changes].reverse().find((c) => c.to < head) || changes[changes.length - 1];
    current = changes.indexOf(target);
    view.dispatch({ selection: { anchor: target.from }, scrollIntoView: true });
    say(`Suggestion ${current + 1} of ${changes.length}${target.stale ? " (stale: edited since proposed)" : ""}: ` +
      `${target.deleted ? `delete “${target.deleted}”` : ""}${target.deleted && target.inserted ? ", " : ""}` +
      `${target.inserted ? `insert “${target.inserted}”` : ""}`);
    return true;
  };
  const changeAtCursor = () => {
    const head = page.view.state.selection.main.head;
    return suggestionsIn(page).find((c) => c.from <= head && head <= c.to);
  };
  const decideAtCursor = (decision) => {
    const change = changeAtCursor() || suggestionsIn(page)[0];
    if (!change) {
      say("No suggestion here.");
      return true;
    }
    review.decide(change.id, decision, noteFor(page.root, change.id));
    return true;
  };
  return { focusChange, decideAtCursor };
}

/** The inline buttons, and Alt-A / Alt-R in a note field (where the editor's keymap does not run). */
function bindDecisionControls(page, review) {
  const { root } = page;
  root.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-decision]");
    if (!button) return;
    const uid = button.dataset.suggestion;
    await review.decide(uid, button.dataset.decision, noteFor(root, uid));
  });
  root.addEventListener("keydown", (event) => {
    const field = event.target.closest && event.target.closest("input.lr-note");
    if (!field || !event.altKey || !["KeyA", "KeyR"].includes(event.code)) return;
    event.preventDefault();
    review.decide(field.dataset.suggestion, event.code === "KeyA" ? "accept" : "reject", field.value.trim());
  });
}

/** The three views; the two previews are read-only (they hide part of the text). */
function bindViewSwitch(page) {
  const { config, view, readOnly } = page;
  document.querySelectorAll("input[name=lr-view]").forEach((input) =>
    input.addEventListener("change", () => {
      view.dispatch({
        effects: [
          setView.of(input.value),
          readOnly.reconfigure(EditorState.readOnly.of(!config.canEdit || input.value !== "suggestions")),
        ],
      });
    }),
  );
}

/** The Authors choice: hidden, strips in the margin or colours in the text; the last one is kept. */
function bindAuthorship(page) {
  const select = document.getElementById("lr-authorship");
  if (!select) return;
  select.value = page.authors.stored();
  page.authors.show(page.view, select.value);
  select.addEventListener("change", () => page.authors.show(page.view, select.value));
}

/** Live preview or source: the choice is kept (preview.js). */
function bindPreview(page) {
  const toggle = document.getElementById("lr-live-preview");
  if (!toggle) return;
  toggle.checked = page.preview.enabled();
  toggle.addEventListener("change", () => page.preview.set(page.view, toggle.checked));
}

function bindBulkAndUndo(review) {
  for (const button of document.querySelectorAll("button[data-all]")) {
    button.addEventListener("click", () => review.decideAll(button.dataset.all === "accept"));
  }
  review.undoButton.addEventListener("click", () => review.undo());
}

/** The pending rows, fetched now and again whenever the suggestions in the note change. */
function followPending(page, review) {
  let markupSeen = "";
  page.ytext.observe(() => {
    const ids = suggestionsIn(page).map((c) => c.id).join(",");
    if (ids !== markupSeen) (markupSeen = ids), review.refresh();
  });
  review.refresh();
}

/** The Comments panel; every change of the note's text schedules a look at its threads (a timer, at most one
 * a second: threads.js). */
function followThreads(page) {
  page.threads = startThreads(page, { marks: () => page.view.state.field(page.field).changes.flatMap((c) => c.marks) });
  if (!page.threads) return;
  page.ytext.observe(() => page.threads.schedule());
  page.threads.schedule();
}

/** Who is here. */
function showPresence(page) {
  const { provider, ydoc, awareness } = page;
  const bar = document.getElementById("lr-presence");
  const show = () => {
    bar.replaceChildren();
    for (const [clientId, state] of awareness.getStates()) {
      if (!state.user) continue;
      const chip = document.createElement("span");
      chip.className = "lr-person";
      chip.style.borderColor = state.user.color || "#888";
      chip.textContent = state.user.name + (clientId === ydoc.clientID ? " (you)" : "");
      bar.append(chip);
    }
  };
  provider.awareness.on("change", show);
  show();
}

/** A link ending in #L<n> (MCP `get_url`'s) opens the note at line n of its text once synced. */
function openAtLine(page) {
  const found = /^#L(\d+)$/.exec(location.hash);
  if (!found) return;
  const go = (synced) => {
    if (synced === false) return;
    page.provider.off("sync", go);
    setTimeout(() => {
      const doc = page.view.state.doc;
      const line = doc.line(Math.min(Math.max(1, Number(found[1])), doc.lines));
      page.view.dispatch({ selection: { anchor: line.from }, scrollIntoView: true });
      page.view.focus();
    }, 0);
  };
  page.provider.on("sync", go);
}

/** A link ending in #suggestion-<id> (the review inbox's) opens the note at that suggestion once synced. */
function openAtSuggestion(page) {
  const prefix = "#suggestion-";
  if (!location.hash.startsWith(prefix)) return;
  const wanted = decodeURIComponent(location.hash.slice(prefix.length));
  const go = (synced) => {
    if (synced === false) return;
    page.provider.off("sync", go);
    setTimeout(() => {
      const change = suggestionsIn(page).find((c) => c.id === wanted);
      if (!change) return page.say("That suggestion is no longer in this note.");
      page.view.dispatch({ selection: { anchor: change.from }, scrollIntoView: true });
      page.view.focus();
      const author = change.metadata && change.metadata.author;
      page.say(`At ${author ? `${author}'s ` : "the "}suggestion.`);
    }, 0);
  };
  page.provider.on("sync", go);
}

/** The connection's state; a close code 4400-4499 (refused for good) stops reconnecting. */
function showConnection(page) {
  const { provider, root, say } = page;
  const connection = document.getElementById("lr-connection");
  provider.on("status", ({ status: s }) => {
    connection.textContent = s === "connected" ? "live" : s;
    connection.dataset.state = s;
  });
  provider.on("sync", (synced) => {
    if (synced) root.dataset.synced = "true";
  });
  provider.on("connection-close", (event) => {
    if (event && event.code >= 4400 && event.code < 4500) {
      provider.shouldConnect = false;
      say(`The server closed the connection: ${event.reason || event.code}`, "error");
    }
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
