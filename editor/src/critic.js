// CriticMarkup in the browser: the same marks suggestions/markup/criticmarkup.py finds (non-greedy, no nesting,
// optional `{json}@@` metadata), grouped into changes by their suggestion id. Positions are JavaScript
// string (UTF-16) indices, which is what CodeMirror and Y.Text use.

const OPENING = /\{(?:\+\+|--|~~|==|>>)/g;
const CLOSING = {
  "{++": ["addition", "++}"],
  "{--": ["deletion", "--}"],
  "{~~": ["substitution", "~~}"],
  "{==": ["highlight", "==}"],
  "{>>": ["comment", "<<}"],
};
const WIDTH = 3;

function splitMetadata(body) {
  if (!body.startsWith("{")) return [null, 0];
  // The metadata is the JSON object at the start of the body, followed by "@@". The server escapes "@@"
  // inside its strings, but other writers may not: a "}@@" inside a string is skipped, as the server's
  // parser skips it. An object's text ends at exactly one "}", so the first "}@@" that ends valid JSON is it.
  for (let end = body.indexOf("}@@"); end >= 0; end = body.indexOf("}@@", end + 1)) {
    let value;
    try {
      value = JSON.parse(body.slice(0, end + 1));
    } catch {
      continue;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [null, 0];
    return [value, end + 3];
  }
  return [null, 0];
}

/** Every mark of `text`, in order: {kind, from, to, contentFrom, contentTo, metaFrom, metadata, sepAt}. */
export function parseMarks(text) {
  const marks = [];
  const unclosable = new Set();
  let noSeparatorBefore = -1;
  OPENING.lastIndex = 0;
  let found;
  while ((found = OPENING.exec(text)) !== null) {
    const start = found.index;
    const delimiter = found[0];
    OPENING.lastIndex = start + 1;
    if (unclosable.has(delimiter) || (delimiter === "{~~" && start < noSeparatorBefore)) continue;
    const [kind, closing] = CLOSING[delimiter];
    const bodyStart = start + WIDTH;
    const bodyEnd = text.indexOf(closing, bodyStart);
    if (bodyEnd < 0) {
      unclosable.add(delimiter);
      continue;
    }
    const body = text.slice(bodyStart, bodyEnd);
    const [metadata, skip] = splitMetadata(body);
    const contentFrom = bodyStart + skip;
    let sepAt = -1;
    if (kind === "substitution") {
      const separator = text.slice(contentFrom, bodyEnd).indexOf("~>");
      if (separator < 0) {
        noSeparatorBefore = bodyEnd;
        continue;
      }
      sepAt = contentFrom + separator;
    }
    marks.push({ kind, from: start, to: bodyEnd + WIDTH, contentFrom, contentTo: bodyEnd, metadata, sepAt });
    OPENING.lastIndex = bodyEnd + WIDTH;
  }
  return marks;
}

/** Marks grouped into reviewable changes: adjacent marks with the same suggestion id form one. */
export function groupChanges(marks, text) {
  const changes = [];
  for (const mark of marks) {
    const id = mark.metadata && typeof mark.metadata.id === "string" ? mark.metadata.id : null;
    const last = changes[changes.length - 1];
    if (last && id && last.id === id && text.slice(last.to, mark.from).trim() === "") {
      last.marks.push(mark);
      last.to = mark.to;
      continue;
    }
    changes.push({ id, from: mark.from, to: mark.to, marks: [mark], metadata: mark.metadata });
  }
  for (const change of changes) {
    change.deleted = change.marks
      .filter((m) => m.kind === "deletion" || m.kind === "substitution")
      .map((m) => text.slice(m.contentFrom, m.kind === "substitution" ? m.sepAt : m.contentTo))
      .join("");
    change.inserted = change.marks
      .filter((m) => m.kind === "addition" || m.kind === "substitution")
      .map((m) => text.slice(m.kind === "substitution" ? m.sepAt + 2 : m.contentFrom, m.contentTo))
      .join("");
  }
  return changes;
}

/** "3 hours ago" from a millisecond timestamp. */
export function ageOf(timestamp, now = Date.now()) {
  if (typeof timestamp !== "number") return "";
  const seconds = Math.max(0, (now - timestamp) / 1000);
  const units = [
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
  ];
  for (const [name, size] of units) {
    const n = Math.floor(seconds / size);
    if (n >= 1) return `${n} ${name}${n > 1 ? "s" : ""} ago`;
  }
  return "just now";
}
