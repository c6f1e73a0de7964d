// The editor page of Lens Relay: CodeMirror 6 bound to the document's Y.Text("contents") over the relay's
// own /d/<id>/ws route (the Django session authenticates the socket: no token in the page), presence,
// and the assistants' CriticMarkup suggestions shown as tracked changes with Accept / Reject inline.
// Everything the page needs from the server comes in the JSON config the template writes.

import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import { yCollab } from "y-codemirror.next";
import { EditorState, StateField, StateEffect, Compartment, RangeSetBuilder } from "@codemirror/state";
import {
  EditorView,
  Decoration,
  WidgetType,
  keymap,
  lineNumbers,
  drawSelection,
  highlightActiveLine,
  highlightSpecialChars,
} from "@codemirror/view";
import { defaultKeymap } from "@codemirror/commands";
import { markdown } from "@codemirror/lang-markdown";
import { syntaxHighlighting, defaultHighlightStyle } from "@codemirror/language";
import { parseMarks, groupChanges, ageOf } from "./critic.js";
import { startFileTree } from "./filetree.js";
import { postForm } from "./http.js";

const COLORS = ["#d32f2f", "#1976d2", "#388e3c", "#f57c00", "#0097a7", "#c2185b", "#5d4037", "#455a64"];

function colorOf(name) {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return COLORS[hash % COLORS.length];
}

// -- tracked changes ------------------------------------------------------------------------------------

// As NOTE_MAX_CHARS in suggestions/review/review_page.py (the server cuts a longer note too).
const NOTE_MAX_CHARS = 2000;
const setView = StateEffect.define();
const setPending = StateEffect.define();

class AuthorWidget extends WidgetType {
  constructor(author, age, stamp) {
    super();
    this.author = author;
    this.age = age;
    this.stamp = stamp;
  }
  eq(other) {
    return other.author === this.author && other.age === this.age;
  }
  toDOM() {
    const span = document.createElement("span");
    span.className = "lr-author";
    span.textContent = this.author;
    span.title = `${this.author} · ${this.age}${this.stamp ? ` · ${new Date(this.stamp).toISOString()}` : ""}`;
    return span;
  }
}

class NoteWidget extends WidgetType {
  constructor(text) {
    super();
    this.text = text;
  }
  eq(other) {
    return other.text === this.text;
  }
  toDOM() {
    const span = document.createElement("span");
    span.className = "lr-comment";
    span.textContent = this.text;
    span.title = "comment";
    return span;
  }
}

class ActionsWidget extends WidgetType {
  constructor(id, stale, canReview) {
    super();
    this.id = id;
    this.stale = stale;
    this.canReview = canReview;
  }
  eq(other) {
    return other.id === this.id && other.stale === this.stale && other.canReview === this.canReview;
  }
  toDOM() {
    const box = document.createElement("span");
    box.className = "lr-actions";
    box.dataset.suggestion = this.id;
    if (this.stale) {
      const badge = document.createElement("span");
      badge.className = "lr-stale";
      badge.textContent = "stale";
      badge.title = "A person typed inside this suggestion since it was proposed";
      box.append(badge);
    }
    if (this.canReview) {
      const choices = [
        ["accept", "✓", "Accept (Alt-A)"],
        ["reject", "✗", "Reject (Alt-R)"],
      ];
      // The optional note to the assistant travels with whichever choice is made next (button or key).
      const note = document.createElement("input");
      note.type = "text";
      note.className = "lr-note";
      note.maxLength = NOTE_MAX_CHARS;
      note.placeholder = "✎ note to the assistant";
      note.setAttribute("aria-label", `Note to the assistant for suggestion ${this.id} (optional)`);
      note.dataset.suggestion = this.id;
      box.append(note);
      // A stale suggestion cannot be applied as proposed: clean up its markup, keeping what is there.
      if (this.stale) choices.push(["clean_up", "clean up", "Remove its markup, keep the text as it is now"]);
      for (const [decision, label, title] of choices) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `lr-${decision}`;
        button.textContent = label;
        button.title = title;
        button.setAttribute("aria-label", `${title.split(" (")[0]} suggestion ${this.id}`);
        button.dataset.decision = decision;
        button.dataset.suggestion = this.id;
        box.append(button);
      }
    }
    return box;
  }
  ignoreEvent() {
    return true;
  }
}

function buildDecorations(state, view, pending, canReview) {
  const text = state.doc.toString();
  const changes = groupChanges(parseMarks(text), text);
  const builder = new RangeSetBuilder();
  const hidden = Decoration.replace({});
  const ranges = [];
  const add = (from, to, deco) => {
    if (to < from || (to === from && !deco.point)) return;
    ranges.push([from, to, deco]);
  };
  const seen = new Map();
  for (const change of changes) {
    const meta = change.metadata || {};
    const row = change.id ? pending.get(change.id) : undefined;
    let stale = false;
    if (row) {
      const index = seen.get(change.id) || 0;
      seen.set(change.id, index + 1);
      const hunk = row.hunks[index];
      stale = row.status === "stale" || !hunk || hunk.old !== change.deleted || hunk.new !== change.inserted;
    }
    change.stale = stale;
    const cls = stale ? " lr-is-stale" : "";
    change.marks.forEach((mark, i) => {
      const opening = i === 0 && view === "suggestions" && meta.author
        ? Decoration.replace({ widget: new AuthorWidget(String(meta.author), ageOf(meta.timestamp), meta.timestamp) })
        : hidden;
      add(mark.from, mark.contentFrom, opening);
      const shown = (kind) => {
        if (view === "suggestions") return Decoration.mark({ class: `lr-${kind}${cls}`, attributes: { "data-suggestion": change.id || "" } });
        if ((view === "accepted") === (kind === "ins")) return null;
        return hidden;
      };
      if (mark.kind === "addition" || mark.kind === "deletion") {
        const deco = shown(mark.kind === "addition" ? "ins" : "del");
        if (deco) add(mark.contentFrom, mark.contentTo, deco);
      } else if (mark.kind === "substitution") {
        const old = shown("del");
        if (old) add(mark.contentFrom, mark.sepAt, old);
        add(mark.sepAt, mark.sepAt + 2, hidden);
        const neu = shown("ins");
        if (neu) add(mark.sepAt + 2, mark.contentTo, neu);
      } else if (mark.kind === "comment") {
        const note = text.slice(mark.contentFrom, mark.contentTo);
        add(mark.contentFrom, mark.contentTo, view === "suggestions" ? Decoration.replace({ widget: new NoteWidget(note) }) : hidden);
      } else if (mark.kind === "highlight" && view === "suggestions") {
        add(mark.contentFrom, mark.contentTo, Decoration.mark({ class: "lr-hl" }));
      }
      add(mark.contentTo, mark.to, hidden);
    });
    if (view === "suggestions" && change.id) {
      add(change.to, change.to, Decoration.widget({ widget: new ActionsWidget(change.id, stale, canReview), side: 1 }));
    }
  }
  ranges.sort((a, b) => a[0] - b[0] || (a[2].startSide || 0) - (b[2].startSide || 0));
  for (const [from, to, deco] of ranges) builder.add(from, to, deco);
  return { decorations: builder.finish(), changes };
}

function trackedChanges(canReview) {
  return StateField.define({
    create(state) {
      const pending = new Map();
      return { view: "suggestions", pending, ...buildDecorations(state, "suggestions", pending, canReview) };
    },
    update(value, tr) {
      let { view, pending } = value;
      let dirty = tr.docChanged;
      for (const effect of tr.effects) {
        if (effect.is(setView)) (view = effect.value), (dirty = true);
        if (effect.is(setPending)) (pending = effect.value), (dirty = true);
      }
      if (!dirty) return value;
      return { view, pending, ...buildDecorations(tr.state, view, pending, canReview) };
    },
    provide: (field) => [
      EditorView.decorations.from(field, (value) => value.decorations),
      EditorView.atomicRanges.of((view) => view.state.field(field).decorations),
    ],
  });
}

// -- the page ---------------------------------------------------------------------------------------------

function start() {
  const config = JSON.parse(document.getElementById("lr-editor-config").textContent);
  const root = document.getElementById("lr-editor");
  const status = document.getElementById("lr-status");
  const say = (message, level = "info") => {
    status.textContent = message;
    status.dataset.level = level;
  };
  startFileTree(config);
  if (!config.text) return; // a binary file: the template shows its preview or download

  const ydoc = new Y.Doc();
  const ytext = ydoc.getText("contents");
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const provider = new WebsocketProvider(`${scheme}//${location.host}${config.wsPath}`, config.docId, ydoc);
  const me = config.user;
  provider.awareness.setLocalStateField("user", { name: me, color: colorOf(me), colorLight: `${colorOf(me)}33` });

  const field = trackedChanges(config.canReview);
  const readOnly = new Compartment();
  const language = config.markdown ? [markdown(), syntaxHighlighting(defaultHighlightStyle, { fallback: true })] : [];
  let current = 0;

  const changesNow = () => view.state.field(field).changes.filter((c) => c.id);
  const focusChange = (direction) => {
    const changes = changesNow();
    if (!changes.length) return say("No suggestions in this note.");
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
    const head = view.state.selection.main.head;
    return changesNow().find((c) => c.from <= head && head <= c.to);
  };
  const noteFor = (uid) => {
    const field = [...root.querySelectorAll("input.lr-note")].find((input) => input.dataset.suggestion === uid);
    return field ? field.value.trim() : "";
  };
  const decide = async (uid, decision, note = "") => {
    if (!config.canReview) return say("Deciding needs the permission to review suggestions.", "error");
    say(`${{ accept: "Accepting", reject: "Rejecting", clean_up: "Cleaning up" }[decision]}…`);
    const answer = await postForm(config.decideUrl.replace("UID", uid), { decision, note });
    if (answer.ok && decision !== "clean_up") {
      lastDecided = { uid, batch: false };
      undoButton.hidden = false;
      say(answer.message || `${decision}ed`, "success");
    } else if (!answer.ok) say(answer.reason || answer.message || "refused", "error");
    else say(answer.message, "success");
    refreshPending();
    return answer;
  };
  const decideAtCursor = (decision) => {
    const change = changeAtCursor() || changesNow()[0];
    if (!change) {
      say("No suggestion here.");
      return true;
    }
    decide(change.id, decision, noteFor(change.id));
    return true;
  };

  const view = new EditorView({
    parent: root,
    state: EditorState.create({
      doc: ytext.toString(),
      extensions: [
        lineNumbers(),
        highlightSpecialChars(),
        drawSelection(),
        highlightActiveLine(),
        EditorView.lineWrapping,
        language,
        field,
        readOnly.of([EditorState.readOnly.of(!config.canEdit), EditorView.editable.of(true)]),
        keymap.of([
          { key: "Alt-n", run: () => focusChange(1) },
          { key: "Alt-p", run: () => focusChange(-1) },
          { key: "Alt-a", run: () => decideAtCursor("accept") },
          { key: "Alt-r", run: () => decideAtCursor("reject") },
          ...defaultKeymap,
        ]),
        yCollab(ytext, provider.awareness),
      ],
    }),
  });
  window.lensEditor = { view, ydoc, ytext, provider };

  root.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-decision]");
    if (!button) return;
    const uid = button.dataset.suggestion;
    await decide(uid, button.dataset.decision, noteFor(uid));
  });
  // In a note field the editor's keymap does not run: Alt-A / Alt-R decide that field's suggestion.
  root.addEventListener("keydown", (event) => {
    const field = event.target.closest && event.target.closest("input.lr-note");
    if (!field || !event.altKey || !["KeyA", "KeyR"].includes(event.code)) return;
    event.preventDefault();
    decide(field.dataset.suggestion, event.code === "KeyA" ? "accept" : "reject", field.value.trim());
  });

  // The three views; the two previews are read-only (they hide part of the text).
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

  // Accept all / Reject all, confirmed first.
  const pendingCount = document.getElementById("lr-pending");
  for (const button of document.querySelectorAll("button[data-all]")) {
    button.addEventListener("click", async () => {
      const accept = button.dataset.all === "accept";
      const count = pendingMap.size;
      if (!count || !window.confirm(`${accept ? "Accept" : "Reject"} all ${count} pending suggestions of this note?`)) return;
      say(`${accept ? "Accepting" : "Rejecting"} all…`);
      const answer = await postForm(config.decideAllUrl, { decision: accept ? "accept" : "reject" });
      say(answer.message || answer.reason || "", answer.ok ? "success" : "error");
      if (answer.decided && answer.decided.length) {
        // A bulk decision is undone as a whole: the undo endpoint takes any of its suggestions.
        lastDecided = { uid: answer.decided[0], batch: true };
        undoButton.hidden = false;
      }
      refreshPending();
    });
  }

  // Undo the last decision taken on this page.
  let lastDecided = null;
  const undoButton = document.getElementById("lr-undo");
  undoButton.addEventListener("click", async () => {
    if (!lastDecided) return;
    const answer = await postForm(config.undoUrl.replace("UID", lastDecided.uid), lastDecided.batch ? { batch: "1" } : {});
    say(answer.message || answer.reason || (answer.ok ? "undone" : "refused"), answer.ok ? "success" : "error");
    if (answer.ok) (lastDecided = null), (undoButton.hidden = true);
    refreshPending();
  });

  // The pending rows (their proposed hunks) tell a stale suggestion from a fresh one.
  let pendingMap = new Map();
  let refreshing = null;
  async function refreshPending() {
    if (refreshing) return refreshing;
    refreshing = (async () => {
      try {
        const response = await fetch(config.pendingUrl, { credentials: "same-origin" });
        if (!response.ok) return;
        const rows = await response.json();
        pendingMap = new Map(rows.pending.map((row) => [row.uid, row]));
        pendingCount.textContent = String(pendingMap.size);
        for (const button of document.querySelectorAll("button[data-all]")) button.disabled = !pendingMap.size || !config.canReview;
        view.dispatch({ effects: setPending.of(pendingMap) });
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  }
  let markupSeen = "";
  ytext.observe(() => {
    const ids = changesNow().map((c) => c.id).join(",");
    if (ids !== markupSeen) (markupSeen = ids), refreshPending();
  });
  refreshPending();

  // Who is here.
  const bar = document.getElementById("lr-presence");
  const showPresence = () => {
    bar.replaceChildren();
    for (const [clientId, state] of provider.awareness.getStates()) {
      if (!state.user) continue;
      const chip = document.createElement("span");
      chip.className = "lr-person";
      chip.style.borderColor = state.user.color || "#888";
      chip.textContent = state.user.name + (clientId === ydoc.clientID ? " (you)" : "");
      bar.append(chip);
    }
  };
  provider.awareness.on("change", showPresence);
  showPresence();

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
