// Files in a note: a file pasted or dropped into the editor is added beside the note (an attachment of its
// folder, suggestions/review/editor_files.py) and embedded at the cursor as `![[name.png]]`, typed like any
// text (so in suggesting mode the embed is the person's suggestion); an embedded image of the folder is
// shown under its line.
//
// The images are block widgets, which CodeMirror takes only from the state: a field keeps them and, on a
// change, reads again only the lines the change touched (no scan of the whole note per keystroke); the
// whole note is read again only when the folder's files change (a new listing of the tree).

import { RangeSetBuilder, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, WidgetType } from "@codemirror/view";
import { linksInLine } from "./linkrules.js";

// The types the file route serves inline (lensrelay/access/user_content.py): SVG is never shown.
export const IMAGE_NAME = /\.(png|jpe?g|gif|webp|avif|bmp)$/i;
const refreshEmbeds = StateEffect.define();

/** The image embeds of one line: `{at, target}` (`at`: the end of the line, where the image goes). */
export function imageEmbedsIn(text) {
  return linksInLine(text).filter((link) => link.embed && !link.heading && IMAGE_NAME.test(link.target));
}

/** What can be uploaded: null, or why not (said to the person, nothing sent). */
export function uploadRefusal(config, files) {
  if (!config.canEdit) return "Adding a file needs the permission “Can edit documents live”.";
  const big = files.find((file) => file.size > config.maxFileBytes);
  if (big) {
    const limit = config.maxFileBytes / (1024 * 1024);
    return `${big.name || "The file"} is larger than the limit of ${Number(limit.toFixed(2))} MB: nothing was added.`;
  }
  return null;
}

class ImageWidget extends WidgetType {
  constructor(src, name) {
    super();
    this.src = src;
    this.name = name;
  }
  eq(other) {
    return other.src === this.src;
  }
  toDOM(view) {
    const box = document.createElement("div");
    box.className = "lr-embed";
    const img = document.createElement("img");
    img.src = this.src;
    img.alt = this.name;
    img.title = this.name;
    img.loading = "lazy";
    // The line heights are measured again once the image has its size.
    img.addEventListener("load", () => view.requestMeasure());
    box.append(img);
    return box;
  }
  get estimatedHeight() {
    return 120;
  }
  ignoreEvent() {
    return false;
  }
}

/**
 * The page's embeds: `extension`, `refresh(view)` once the folder's files changed, and the paste and drop
 * handlers. `resolve(target)`: the folder's entry a link reaches (links.js); `say`: the status line.
 */
export function fileEmbeds(config, { resolve, say }) {
  const imageOf = (target) => {
    const entry = config.canViewFiles ? resolve(target) : null;
    if (!entry || !entry.doc_id || entry.type === "markdown" || entry.type === "folder") return null;
    return Decoration.widget({
      widget: new ImageWidget(config.fileUrl.replace("DOC", encodeURIComponent(entry.doc_id)), target),
      block: true,
      side: 1,
    });
  };
  const lineDecorations = (line, add) => {
    for (const link of imageEmbedsIn(line.text)) {
      const decoration = imageOf(link.target);
      if (decoration) return add(line.to, decoration); // one image per line is enough to see it is there
    }
  };
  const build = (doc) => {
    const builder = new RangeSetBuilder();
    for (let number = 1; number <= doc.lines; number++) lineDecorations(doc.line(number), (at, d) => builder.add(at, at, d));
    return builder.finish();
  };
  const field = StateField.define({
    create: (state) => build(state.doc),
    update(value, tr) {
      if (tr.effects.some((e) => e.is(refreshEmbeds))) return build(tr.state.doc);
      if (!tr.docChanged) return value;
      value = value.map(tr.changes);
      const doc = tr.state.doc;
      // The lines each change touches, runs of them merged: read again, their images replaced.
      const runs = [];
      tr.changes.iterChangedRanges((_fromA, _toA, fromB, toB) => {
        const first = doc.lineAt(fromB).number;
        const last = doc.lineAt(toB).number;
        const previous = runs[runs.length - 1];
        if (previous && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
        else runs.push([first, last]);
      });
      for (const [first, last] of runs) {
        const added = [];
        for (let number = first; number <= last; number++) {
          lineDecorations(doc.line(number), (at, d) => added.push(d.range(at)));
        }
        value = value.update({ filterFrom: doc.line(first).from, filterTo: doc.line(last).to, filter: () => false, add: added });
      }
      return value;
    },
    provide: (f) => EditorView.decorations.from(f),
  });

  async function upload(view, files, at) {
    const refusal = uploadRefusal(config, files);
    if (refusal) return say(refusal, "error");
    const embeds = [];
    for (const file of files) {
      say(`Adding ${file.name || "the file"}…`);
      const body = new FormData();
      body.append("file", file, file.name || "image");
      let answer;
      try {
        const response = await fetch(config.attachUrl, {
          method: "POST",
          body,
          credentials: "same-origin",
          headers: { "X-CSRFToken": csrfToken() },
        });
        answer = await response.json().catch(() => ({ ok: false, reason: `The server answered ${response.status}.` }));
      } catch {
        answer = { ok: false, reason: "The server could not be reached: nothing was added." };
      }
      if (!answer.ok) return say(answer.reason || "The file was not added.", "error");
      embeds.push(answer.embed);
      say(answer.message, "success");
    }
    if (!embeds.length) return;
    // At the cursor as it is now (the person may have moved on while the file went up), or where it was
    // dropped; typed like any text, so the suggesting filter sees it.
    const pos = at === null ? view.state.selection.main.head : Math.min(at, view.state.doc.length);
    const insert = embeds.join("\n");
    view.dispatch({ changes: { from: pos, insert }, selection: { anchor: pos + insert.length }, userEvent: "input.paste", scrollIntoView: true });
  }

  const filesOf = (transfer) => (transfer && transfer.files ? [...transfer.files] : []);
  const handlers = EditorView.domEventHandlers({
    paste(event, view) {
      const files = filesOf(event.clipboardData);
      if (!files.length) return false;
      event.preventDefault();
      upload(view, files, null);
      return true;
    },
    drop(event, view) {
      const files = filesOf(event.dataTransfer);
      if (!files.length) return false;
      event.preventDefault();
      upload(view, files, view.posAtCoords({ x: event.clientX, y: event.clientY }));
      return true;
    },
  });

  return {
    extension: config.markdown ? [field, handlers] : [],
    refresh: (view) => view.dispatch({ effects: refreshEmbeds.of(null) }),
  };
}

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}
