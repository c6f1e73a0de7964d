// Each person and assistant in a room gets a colour of their own: their cursor, their chip in the bar and
// their text when Authors shows who wrote what. A hash of the name alone makes two people alike as soon as
// two names fall on the same colour (with 8 colours, two of 5 people already do more often than not), so the
// colours are handed out. Each participant picks its own when it joins (its name's preferred colour when no
// one else in the room shows it, else the next free one) and publishes it in its awareness state, as Yjs
// clients do; every page shows the colours participants publish, so one person is one colour on every
// page. Two who join at the same moment may pick alike: the one with the higher client id picks again. The
// server picks an assistant's the same way (lensrelay/sync/colours.py, same palette and hash). A client
// that publishes no colour of this palette (another editor) is given one by each page, as before.

/** Ten hues far apart, dark enough for white label text and bright enough on a dark background. */
export const PALETTE = [
  "#d32f2f", // red
  "#1976d2", // blue
  "#2e7d32", // green
  "#ef6c00", // orange
  "#7b1fa2", // purple
  "#00838f", // teal
  "#c2185b", // pink
  "#6d4c41", // brown
  "#5c6bc0", // indigo
  "#9e9d24", // olive
];

/** The palette index a name prefers: the server computes the same (lensrelay/sync/colours.py). */
export function preferredIndex(name, size = PALETTE.length) {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return hash % size;
}

const preferred = preferredIndex;

/**
 * The colour a participant named `name` publishes, given the other awareness `states` (client id → state):
 * the colour its name already shows in another tab (unless someone else shows it too), else its preferred
 * colour if no one else shows it, else the next free one (the least shown when none is free).
 */
export function ownColour(name, states, palette = PALETTE) {
  const shown = new Map(palette.map((c) => [c, 0]));
  const mine = [];
  for (const state of states.values()) {
    const user = state && state.user;
    if (!user || !shown.has(user.color)) continue;
    if (String(user.name) === name) mine.push(user.color);
    else shown.set(user.color, shown.get(user.color) + 1);
  }
  const kept = mine.find((colour) => shown.get(colour) === 0);
  return kept || leastShown(name, shown, palette);
}

/** From the name's preferred colour on, the first one shown least (by `shown`, colour → count). */
function leastShown(name, shown, palette) {
  const start = preferred(name, palette.length);
  let chosen = null;
  for (let step = 0; step < palette.length; step++) {
    const colour = palette[(start + step) % palette.length];
    if (chosen === null || shown.get(colour) < shown.get(chosen)) chosen = colour;
    if (shown.get(chosen) === 0) break;
  }
  return chosen;
}

/** Whether the participant (`clientId`, `name`, showing `colour` since `since`) must pick again: someone
 * else shows the same colour and showed it first (an earlier `since`; no `since`, as the server's assistants
 * publish, counts as first; at the same moment the lower client id keeps it). */
export function mustPickAgain(clientId, name, colour, since, states) {
  for (const [id, state] of states) {
    const user = state && state.user;
    if (!user || user.color !== colour || String(user.name) === name) continue;
    const theirs = Number(user.since) || 0;
    if (theirs < since || (theirs === since && id < clientId)) return true;
  }
  return false;
}

/**
 * The colours of `names` (a Map name → colour), keeping every colour `previous` gave: new names, taken in
 * sorted order so that the arrival order does not matter, take their preferred colour if no one has it,
 * else the next free one; only a room with more people than colours shares one (the least used).
 */
export function assignColours(names, previous = new Map(), palette = PALETTE) {
  const given = new Map(previous);
  const uses = new Map(palette.map((c) => [c, 0]));
  for (const colour of given.values()) uses.set(colour, (uses.get(colour) || 0) + 1);
  const fresh = [...new Set(names)].filter((name) => !given.has(name)).sort();
  for (const name of fresh) {
    const chosen = leastShown(name, uses, palette);
    given.set(name, chosen);
    uses.set(chosen, uses.get(chosen) + 1);
  }
  return given;
}

/**
 * The room's colours for one page: `colourOf(name)` (what the name publishes, or was last seen publishing;
 * a name never seen is given one here), and `awareness(raw)`, the provider's awareness as y-codemirror should
 * see it, every state's user in the colour `colourOf` gives. The states are made again only when the
 * awareness changes, never per keystroke. `onAssistants(colours)`: the colours of the assistants seen so far,
 * each time one more is seen.
 */
export function roomColours({ onAssistants = () => {}, palette = PALETTE } = {}) {
  let given = new Map(); // name -> colour: published ones, then the page's own for the rest
  const published = new Set(); // names whose colour is the one they publish
  // An assistant's colour stays marked once seen: its caret can outlive its awareness state by a moment.
  const assistantColours = new Set();
  const colourOf = (name) => {
    if (!given.has(name)) given = assignColours([name], given, palette);
    return given.get(name);
  };
  /** Take the colours the states publish; a name given a colour here that someone now publishes is given
   * another, so that no two show alike. */
  const seat = (states) => {
    const names = [];
    for (const state of states.values()) {
      const user = state && state.user;
      if (!user || !user.name) continue;
      const name = String(user.name);
      names.push(name);
      if (palette.includes(user.color)) {
        given.set(name, user.color);
        published.add(name);
      }
    }
    const claimed = new Set([...published].map((name) => given.get(name)));
    for (const [name, colour] of given) if (!published.has(name) && claimed.has(colour)) given.delete(name);
    given = assignColours(names, given, palette);
  };
  const awareness = (raw) => {
    let cached = null;
    raw.on("change", () => (cached = null));
    const states = () => {
      if (cached) return cached;
      const all = raw.getStates();
      seat(all);
      cached = new Map();
      const before = assistantColours.size;
      for (const [id, state] of all) {
        if (!state.user || !state.user.name) cached.set(id, state);
        else {
          const colour = colourOf(String(state.user.name));
          cached.set(id, { ...state, user: { ...state.user, color: colour, colorLight: `${colour}33` } });
          if (state.assistant) assistantColours.add(colour);
        }
      }
      if (assistantColours.size !== before) onAssistants([...assistantColours]);
      return cached;
    };
    return new Proxy(raw, {
      get(target, key) {
        if (key === "getStates") return states;
        const value = target[key];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  return { colourOf, seat, awareness };
}

/**
 * Publish this page's own colour in `raw` (the provider's awareness) as `name`, and pick again whenever
 * someone who showed it first shows the same one. Returns the colour published now.
 */
export function publishOwnColour(raw, name, { palette = PALETTE, now = Date.now } = {}) {
  const others = () => new Map([...raw.getStates()].filter(([id]) => id !== raw.clientID));
  let colour = null;
  let since = 0;
  const pick = () => {
    colour = ownColour(name, others(), palette);
    since = now();
    raw.setLocalStateField("user", { name, color: colour, colorLight: `${colour}33`, since });
  };
  pick();
  raw.on("change", () => {
    if (mustPickAgain(raw.clientID, name, colour, since, others())) pick();
  });
  return colour;
}

/**
 * The CSS that moves each assistant's cursor label below its line: an assistant's cursor stands where its
 * suggestion starts, right before the suggestion's author label, which the usual label above the caret
 * would cover. y-codemirror's caret says nothing but its colour, and colours are one per name here, so
 * the colour finds it.
 */
export function assistantLabelCss(colours) {
  // The attribute as y-codemirror writes it, and as the browser writes it back once the style is touched.
  const forms = (hex) => {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    return [hex, `rgb(${r}, ${g}, ${b})`];
  };
  return colours
    .flatMap(forms)
    .map((c) => `.cm-ySelectionCaret[style*="background-color: ${c};"] > .cm-ySelectionInfo { top: calc(100% + 1px); }`)
    .join("\n");
}
