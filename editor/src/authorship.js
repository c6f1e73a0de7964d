/**
 * Who wrote what (issue 31). Every writer's Yjs client id is named in the note's `users` map, Yjs's
 * PermanentUserData as Relay.md clients keep it: this editor registers its own under the person's name,
 * the server registers each assistant's. The view shows it three ways: off, a strip in the gutter (each
 * line's main author), or the text coloured per author; either way a span says its author on hover.
 */
import * as Y from "yjs";
import { StateEffect, StateField, RangeSetBuilder } from "@codemirror/state";
import { Decoration, EditorView, GutterMarker, ViewPlugin, gutter } from "@codemirror/view";

export const MODES = ["off", "gutter", "inline"];
const STORED = "lr-authorship";
const UNKNOWN = "someone not named";

/** The text's live runs in order, `{from, to, client, before, after}`, in UTF-16 units as CodeMirror counts;
 * `before` and `after` are the ids of the removed items right around the run, if any. */
export function authorRuns(ytext) {
  const runs = [];
  let pos = 0;
  let gap = false; // something was removed since the last live item: a run ends there
  for (let item = ytext._start; item !== null; item = item.right) {
    if (item.deleted) gap = true;
    if (item.deleted || !item.countable) continue;
    let run = runs[runs.length - 1];
    if (run !== undefined && run.client === item.id.client && !gap) run.to += item.length;
    else {
      run = { from: pos, to: pos + item.length, client: item.id.client, before: removedId(item.left), after: null };
      runs.push(run);
    }
    run.after = removedId(item.right);
    pos += item.length;
    gap = false;
  }
  return runs;
}

const removedId = (item) => (item !== null && item.deleted ? item.id : null);

/** Who removed the marks around a run: the same person removed what stood right before and right after it
 * (accepting a suggestion removes its delimiters and keeps its words), or null. */
export function acceptedBy(run, users) {
  if (run.before === null || run.after === null) return null;
  const before = users.getUserByDeletedId(run.before);
  return before !== undefined && before === users.getUserByDeletedId(run.after) ? before : null;
}

/** The index of the first run that ends after `pos` (runs are in order): where drawing from `pos` starts,
 * so a line or a visible range costs the runs it covers, not the note's. */
export function firstRunAfter(runs, pos) {
  let low = 0;
  let high = runs.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (runs[mid].to <= pos) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The author with the most characters in [from, to), or null (an empty line). */
export function mainAuthor(runs, from, to, nameOf) {
  const counts = new Map();
  for (let i = firstRunAfter(runs, from); i < runs.length; i++) {
    const run = runs[i];
    if (run.from >= to) break;
    const name = nameOf(run.client);
    counts.set(name, (counts.get(name) ?? 0) + Math.min(run.to, to) - Math.max(run.from, from));
  }
  let best = null;
  for (const [name, count] of counts) if (best === null || count > counts.get(best)) best = name;
  return best;
}

/** Names every client by the note's `users` map; with `write`, also this editor's client id under `name`,
 * once the note is synced (so it adds to an entry the note already has rather than racing it). A reader's
 * editor only reads: the server would refuse its write. */
export function registerAuthor(ydoc, provider, name, { write }) {
  const users = new Y.PermanentUserData(ydoc, ydoc.getMap("users"));
  if (!write) return users;
  const register = (synced) => {
    if (!synced) return;
    provider.off("sync", register);
    const entry = ydoc.getMap("users").get(name);
    const ids = entry instanceof Y.Map ? entry.get("ids") : null;
    if (!(ids instanceof Y.Array) || !ids.toArray().includes(ydoc.clientID)) {
      users.setUserMapping(ydoc, ydoc.clientID, name);
    }
  };
  if (provider.synced) register(true);
  else provider.on("sync", register);
  return users;
}

const setMode = StateEffect.define();
const modeField = StateField.define({
  create: () => "off",
  update: (mode, tr) => tr.effects.reduce((m, e) => (e.is(setMode) ? e.value : m), mode),
});

class Strip extends GutterMarker {
  constructor(name, colour) {
    super();
    this.name = name;
    this.colour = colour;
  }
  eq(other) {
    return other.name === this.name && other.colour === this.colour;
  }
  toDOM() {
    const strip = document.createElement("span");
    strip.className = "lr-author-strip";
    strip.style.background = this.colour;
    strip.title = `Written by ${this.name}`;
    return strip;
  }
}

/**
 * The extension and a `show(view, mode)` switch. `colourOf(name)` gives an author's colour (the one their
 * cursor has). Runs are read again on each change of the text, names when drawn (a writer is named in
 * the same update that brings its first text), and only the visible lines are drawn.
 */
export function authorship({ ytext, users, colourOf }) {
  const nameOf = (client) => users.getUserByClientId(client) ?? UNKNOWN;
  let runs = [];
  const readRuns = () => {
    runs = authorRuns(ytext);
  };
  const plugin = ViewPlugin.fromClass(
    class {
      constructor(view) {
        this.view = view;
        this.decorations = Decoration.none;
      }
      update(update) {
        const modeChanged = update.startState.field(modeField) !== update.state.field(modeField);
        // Hidden, the view costs a comparison per update: the text is walked only while it is shown.
        if (update.state.field(modeField) === "off") {
          this.decorations = Decoration.none;
        } else if (update.docChanged || update.viewportChanged || modeChanged) {
          if (update.docChanged || modeChanged) readRuns();
          this.decorations = this.draw(update.view);
        }
      }
      draw(view) {
        if (view.state.field(modeField) !== "inline") return Decoration.none;
        // The Yjs text is ahead of or behind CodeMirror's for a moment while y-codemirror syncs: a drawing
        // is only made when both agree.
        if ((runs.length ? runs[runs.length - 1].to : 0) !== view.state.doc.length) return Decoration.none;
        const builder = new RangeSetBuilder();
        for (const { from, to } of view.visibleRanges) {
          for (let i = firstRunAfter(runs, from); i < runs.length; i++) {
            const run = runs[i];
            if (run.from >= to) break;
            const name = nameOf(run.client);
            const decided = acceptedBy(run, users);
            const said = `Written by ${name}` + (decided !== null && decided !== name ? `, accepted by ${decided}` : "");
            builder.add(
              Math.max(run.from, from),
              Math.min(run.to, to),
              Decoration.mark({
                class: "lr-written",
                attributes: { title: said, style: `background: ${colourOf(name)}26`, "data-author": name },
              }),
            );
          }
        }
        return builder.finish();
      }
    },
    { decorations: (v) => v.decorations },
  );
  const strips = gutter({
    class: "lr-authors",
    lineMarker(view, line) {
      if (view.state.field(modeField) !== "gutter") return null;
      const name = mainAuthor(runs, line.from, Math.max(line.to, line.from + 1), nameOf);
      return name === null ? null : new Strip(name, colourOf(name));
    },
    lineMarkerChange: (update) =>
      update.docChanged || update.startState.field(modeField) !== update.state.field(modeField),
  });
  return {
    extension: [modeField, plugin, strips],
    show(view, mode) {
      if (!MODES.includes(mode)) return;
      try {
        localStorage.setItem(STORED, mode);
      } catch {
        // private windows may refuse storage: the choice still holds for this page
      }
      view.dispatch({ effects: setMode.of(mode) });
    },
    stored() {
      try {
        const mode = localStorage.getItem(STORED);
        return MODES.includes(mode) ? mode : "off";
      } catch {
        return "off";
      }
    },
  };
}

export const authorshipTheme = EditorView.baseTheme({
  ".lr-authors .cm-gutterElement": { padding: "0 2px" },
  ".lr-author-strip": { display: "inline-block", width: "4px", height: "100%", minHeight: "1em", borderRadius: "2px" },
});
