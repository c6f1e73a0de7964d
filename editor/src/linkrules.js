// Wikilinks as the server reads and resolves them (lensrelay/text/wikilinks.py, lensrelay/links/resolve.py):
// the editor knows its folder's entries (its file tree) and, once it asked, the other folders' (links.js).
// Pure functions, no DOM and no CodeMirror: the editor's link completion, unresolved-link marks and
// Ctrl/Cmd-click (editor/src/links.js) and the quick switcher (editor/src/switcher.js) use them, and
// editor/test/links.test.js checks them. Run: node --test editor/test/

// `[[`, then no brackets or newline, then `]]` (wikilinks.py's _WIKILINK).
const WIKILINK = /\[\[([^[\]\n]+)\]\]/g;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const CLOSING_HASHES = /(?:^|[ \t]+)#+$/;
const FENCE = /^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$/;
const FRONT_MATTER_OPENING = /^\ufeff?---[ \t]*\r?(?:\n|$)/;
const FRONT_MATTER_CLOSING = /^(?:---|\.\.\.)[ \t]*\r?$/m;

/** The case- and normalization-insensitive form names are compared in (resolve.py's match_key). */
export function matchKey(text) {
  return text.normalize("NFC").toLowerCase().replace(/\u03c2/g, "\u03c3");
}

/** A link's text between the brackets split as the server splits it: target, heading, alias. */
export function splitLinkBody(body) {
  const pipe = body.indexOf("|");
  let head = pipe < 0 ? body : body.slice(0, pipe);
  const alias = pipe < 0 ? null : body.slice(pipe + 1);
  if (pipe >= 0 && head.endsWith("\\")) head = head.slice(0, -1); // a table's escaped pipe
  const hash = head.indexOf("#");
  const target = (hash < 0 ? head : head.slice(0, hash)).trim();
  const heading = hash < 0 ? null : head.slice(hash + 1).trim();
  return { target, heading, alias };
}

/** The wikilinks of one line of text: `{from, to, target, heading, alias, embed}`, offsets in the line.
 * `[[#]]` and `[[|x]]` are no links (they render as text), as on the server. */
export function linksInLine(line) {
  const links = [];
  for (const match of line.matchAll(WIKILINK)) {
    const { target, heading, alias } = splitLinkBody(match[1]);
    if (target === "" && !heading) continue;
    const embed = match.index > 0 && line[match.index - 1] === "!";
    links.push({ from: match.index, to: match.index + match[0].length, target, heading, alias, embed });
  }
  return links;
}

// -- resolution ----------------------------------------------------------------------------------------------

const indexes = new WeakMap();
const vaults = new WeakMap();

/** The folder's entries (the tree's listing) indexed for resolution: by folder-relative path and by name,
 * each under its match key. Folders are no link targets. Cached per listing. */
export function noteIndex(entries) {
  let index = indexes.get(entries);
  if (index) return index;
  index = { entries, byPath: new Map(), byName: new Map() };
  for (const entry of entries) {
    if (entry.type === "folder") continue;
    const add = (map, key) => (map.get(key) || map.set(key, []).get(key)).push(entry);
    add(index.byPath, matchKey(entry.path));
    add(index.byName, matchKey(entry.path.slice(entry.path.lastIndexOf("/") + 1)));
  }
  indexes.set(entries, index);
  return index;
}

// A link may omit '.md': the note first, then a file literally so named.
const withOptionalMd = (key) => (key.endsWith(".md") ? [key] : [`${key}.md`, key]);
const depth = (entry) => entry.path.split("/").length - 1;
const compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const nearestFirst = (a, b) => depth(a) - depth(b) || compare(matchKey(a.path), matchKey(b.path)) || compare(a.path, b.path);

/** '.' and '..' applied; null when the path climbs above its root or ends up empty. */
function collapse(segments) {
  const out = [];
  for (const segment of segments) {
    if (segment === ".") continue;
    if (segment === "..") {
      if (!out.length) return null;
      out.pop();
    } else out.push(segment);
  }
  return out.length ? out : null;
}

function climbsOut(directory, segments) {
  let level = directory.length;
  for (const segment of segments) {
    if (segment === "..") {
      if (--level < 0) return true;
    } else if (segment !== ".") level += 1;
  }
  return false;
}

function atPath(index, segments) {
  if (!segments) return null;
  const key = matchKey(`/${segments.join("/")}`);
  for (const candidate of withOptionalMd(key)) {
    const found = index.byPath.get(candidate);
    if (found) return [...found].sort(nearestFirst)[0];
  }
  return null;
}

/** The other folders' entries (`[{name, entries}]`, the server's listing of them) indexed for resolution. */
export function otherFolders(folders) {
  let vault = vaults.get(folders);
  if (vault) return vault;
  const sorted = folders
    .map((folder) => ({ name: folder.name, key: matchKey(folder.name), index: noteIndex(folder.entries) }))
    .sort((a, b) => compare(a.key, b.key) || compare(a.name, b.name));
  const byKey = new Map(sorted.map((folder) => [folder.key, folder]));
  vault = { named: (key) => byKey.get(key) || null, all: () => sorted };
  vaults.set(folders, vault);
  return vault;
}

/** No other folder known: links resolve within the open note's folder alone. */
export const NO_OTHER_FOLDERS = Object.freeze({ named: () => null, all: () => [] });

/** Where a vault-root path (`[folder name, ...path]`) leads: this folder's own entries, or another's. */
function inVaultTree(here, segments) {
  const key = matchKey(segments[0]);
  const folder = key === matchKey(here.folder) ? { index: here.index } : here.others.named(key);
  return folder ? atPath(folder.index, segments.slice(1)) : null;
}

function relative(here, segments) {
  const directory = here.sourcePath.split("/").slice(1, -1);
  const inside = collapse([...directory, ...segments]);
  if (inside !== null || !climbsOut(directory, segments)) return atPath(here.index, inside);
  // Above the folder's root is the vault's root, where every shared folder is a directory.
  const inVault = collapse([here.folder, ...directory, ...segments]);
  return inVault && inVault.length >= 2 ? inVaultTree(here, inVault) : null;
}

function namedIn(index, folder, segments, key, last) {
  let found = index.byName.get(key) || [];
  if (segments.length > 1) {
    const suffix = `/${matchKey(segments.join("/"))}${key.slice(last.length)}`;
    found = found.filter((entry) => matchKey(`/${folder}${entry.path}`).endsWith(suffix));
  }
  return found.length ? [...found].sort(nearestFirst)[0] : null;
}

// The note's own folder first, then the first other folder by name; a note before a file so named in
// any of them, as the server looks for the '.md' name across the vault before the bare one.
function byName(here, segments) {
  const last = matchKey(segments[segments.length - 1]);
  for (const key of withOptionalMd(last)) {
    const own = namedIn(here.index, here.folder, segments, key, last);
    if (own) return own;
    for (const folder of here.others.all()) {
      const found = namedIn(folder.index, folder.name, segments, key, last);
      if (found) return found;
    }
  }
  return null;
}

/** The entry a link's target (no heading, no alias) written in the note at `sourcePath` reaches, by the
 * server's rules (`folder`: the note's folder's name, `index` its entries; `others`: the other folders the
 * editor knows, `otherFolders(...)`): relative to the note's directory (climbing out to the vault's root,
 * where every folder is a directory), from the folder's root, from the vault's root through a folder's
 * name, then by name: the nearest in this folder, else in the first other folder by name. An empty target
 * is the note itself. null: no such entry. */
export function resolveLink(index, { sourcePath, folder }, target, others = NO_OTHER_FOLDERS) {
  const here = { index, sourcePath, folder, others };
  const text = target.trim();
  if (text === "") return atPath(index, sourcePath.split("/").slice(1));
  const absolute = text.startsWith("/");
  const segments = text.split("/").filter((segment) => segment !== "");
  if (!segments.length) return null;
  const explicitlyRelative = !absolute && (segments[0] === "." || segments[0] === "..");
  const hasDots = segments.some((segment) => segment === "." || segment === "..");
  if (!absolute) {
    const found = relative(here, segments);
    if (found || explicitlyRelative) return found;
  }
  const found = atPath(index, collapse(segments));
  if (found) return found;
  if (hasDots) return null;
  if (segments.length > 1) {
    const inTree = inVaultTree(here, segments);
    if (inTree) return inTree;
  }
  return absolute ? null : byName(here, segments);
}

/** Whether what a link reaches depends on the other folders' entries, so that without them the editor
 * cannot tell (it names a folder, climbs out of this one, or finds its name nowhere here). */
export function reachesOtherFolders(index, where, target) {
  let asked = false;
  const ask = (answer) => () => {
    asked = true;
    return answer;
  };
  resolveLink(index, where, target, { named: ask(null), all: ask([]) });
  return asked;
}

/** What to write between the brackets to reach `entry` from the note at `sourcePath`: its name alone when
 * that reaches it (Obsidian's shortest form), else its path from the folder's root; '.md' left out. */
export function linkTextFor(index, where, entry) {
  const path = entry.path.replace(/\.md$/i, "");
  const name = path.slice(path.lastIndexOf("/") + 1);
  for (const text of [name, path.slice(1), path]) {
    if (resolveLink(index, where, text) === entry) return text;
  }
  return path;
}

/** The same for `entry` of another folder (`folder`: its name): the path from the vault's root, else the
 * way there climbing out of this note's directory (when this folder holds that path itself). */
export function linkTextElsewhere(index, where, others, entry, folder) {
  const path = `${folder}${entry.path.replace(/\.md$/i, "")}`;
  if (resolveLink(index, where, path, others) === entry) return path;
  return `${"../".repeat(where.sourcePath.split("/").length - 1)}${path}`;
}

// -- matching names -------------------------------------------------------------------------------------------

/** How well `query` matches `text` (a path): higher is better, null for no match. The query's characters
 * must appear in order; a match in the name beats one in the directories, a prefix or a whole word beats
 * a match inside a word, and shorter paths win ties. */
export function matchScore(query, text) {
  const q = matchKey(query.trim());
  const t = matchKey(text);
  const nameStart = t.lastIndexOf("/") + 1;
  const shorter = -t.length / 1000;
  if (!q) return shorter;
  const at = t.indexOf(q, nameStart);
  if (at === nameStart) return 4000 + shorter;
  if (at > 0 && /[\s_\-.]/.test(t[at - 1])) return 3500 + shorter;
  if (at >= 0) return 3000 - at / 100 + shorter;
  const anywhere = t.indexOf(q);
  if (anywhere >= 0) return 2000 - anywhere / 100 + shorter;
  // In order with gaps: fewer and smaller gaps first.
  let position = 0;
  let gaps = 0;
  for (const ch of q) {
    const next = t.indexOf(ch, position);
    if (next < 0) return null;
    if (next > position) gaps += 1 + (next - position) / 100;
    position = next + 1;
  }
  return 1000 - gaps * 10 + shorter;
}

/** The entries (not folders) matching `query`, best first; at most `limit`. */
export function rankEntries(query, entries, limit = 50) {
  const scored = [];
  for (const entry of entries) {
    if (entry.type === "folder") continue;
    const score = matchScore(query, entry.path.replace(/\.md$/i, ""));
    if (score !== null) scored.push([score, entry]);
  }
  scored.sort((a, b) => b[0] - a[0] || compare(a[1].path, b[1].path));
  return scored.slice(0, limit).map(([, entry]) => entry);
}

// -- completion --------------------------------------------------------------------------------------------

/** Which part of an unclosed `[[` link the text before the cursor (`before`, its line so far) is in:
 * `{kind: "name" | "heading" | "alias", from, query, target}` (`from`: where the part starts in `before`;
 * `target`: the link's target so far), or null outside a link. */
export function linkContext(before) {
  const open = before.lastIndexOf("[[");
  if (open < 0) return null;
  const body = before.slice(open + 2);
  if (/[[\]\n]/.test(body)) return null;
  const start = open + 2;
  const pipe = body.indexOf("|");
  const hash = body.indexOf("#");
  if (pipe >= 0) {
    const head = body.slice(0, pipe).replace(/\\$/, "");
    const target = (head.includes("#") ? head.slice(0, head.indexOf("#")) : head).trim();
    return { kind: "alias", from: start + pipe + 1, query: body.slice(pipe + 1), target };
  }
  if (hash >= 0) return { kind: "heading", from: start + hash + 1, query: body.slice(hash + 1), target: body.slice(0, hash).trim() };
  return { kind: "name", from: start, query: body, target: body.trim() };
}

/** The body of a markdown text after its front matter: `{text, firstLine}` (1-based line of the body). */
function bodyOf(text) {
  if (!FRONT_MATTER_OPENING.test(text)) return { text, firstLine: 1 };
  const opening = text.indexOf("\n") + 1;
  const rest = text.slice(opening);
  const closing = FRONT_MATTER_CLOSING.exec(rest);
  if (!opening || !closing) return { text, firstLine: 1 };
  let start = opening + closing.index + closing[0].length;
  if (text[start] === "\n") start += 1;
  return { text: text.slice(start), firstLine: text.slice(0, start).split("\n").length };
}

/** The ATX headings of a markdown text outside fenced code, as the server lists them (frontmatter.py's
 * document_stats): `{level, text, line}`, lines counted from the text's first. */
export function headingsOf(markdown) {
  const { text, firstLine } = bodyOf(markdown);
  const headings = [];
  let fenceChar = "";
  let fenceLength = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const fence = FENCE.exec(line);
    if (fenceChar) {
      if (fence && fence[1][0] === fenceChar && fence[1].length >= fenceLength && !fence[2].trim()) fenceChar = "";
      return;
    }
    if (fence && !(fence[1][0] === "`" && fence[2].includes("`"))) {
      [fenceChar, fenceLength] = [fence[1][0], fence[1].length];
      return;
    }
    const heading = HEADING.exec(line);
    if (heading) headings.push({ level: heading[1].length, text: (heading[2] || "").replace(CLOSING_HASHES, "").trim(), line: firstLine + i });
  });
  return headings;
}

/** A heading as a link writes it: the characters that would end or split the link become spaces. */
export function headingLinkText(heading) {
  return heading.replace(/[[\]|#^]/g, " ").replace(/\s+/g, " ").trim();
}

/** The heading a link's `#heading` part names, compared as Obsidian does (case and spacing aside). */
export function findHeading(headings, wanted) {
  const key = matchKey(headingLinkText(wanted));
  return headings.find((heading) => matchKey(headingLinkText(heading.text)) === key) || null;
}
