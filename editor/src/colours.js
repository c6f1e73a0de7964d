// Each person and assistant in a room gets a colour of their own: their cursor, their chip in the bar and
// their text when Authors shows who wrote what. A hash of the name alone makes two people alike as soon as
// two names fall on the same colour (with 8 colours, two of 5 people already do more often than not), so the
// colours are handed out: a name takes its preferred colour when it is free, else the next free one, and
// keeps it for as long as the page is open. Every client sees the same people, so in practice every
// client hands out the same colours; what matters is that one page never shows two people alike.

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

function preferred(name, size) {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return hash % size;
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
    const start = preferred(name, palette.length);
    let chosen = null;
    for (let step = 0; step < palette.length; step++) {
      const colour = palette[(start + step) % palette.length];
      if (chosen === null || uses.get(colour) < uses.get(chosen)) chosen = colour;
      if (uses.get(chosen) === 0) break;
    }
    given.set(name, chosen);
    uses.set(chosen, uses.get(chosen) + 1);
  }
  return given;
}

/**
 * The room's colours for one page: `colourOf(name)` (a name not met yet is given one then), and
 * `awareness(raw)`, the provider's awareness as y-codemirror should see it, every state's user in the colour
 * given here rather than the one its client chose. The recoloured states are made again only when the
 * awareness changes, never per keystroke. `onAssistants(colours)`: the colours of the assistants seen so far,
 * each time one more is seen.
 */
export function roomColours({ onAssistants = () => {} } = {}) {
  let given = new Map();
  // An assistant's colour stays marked once seen: its caret can outlive its awareness state by a moment,
  // and a colour is never handed to anyone else on this page.
  const assistantColours = new Set();
  const colourOf = (name) => {
    if (!given.has(name)) given = assignColours([name], given);
    return given.get(name);
  };
  const seat = (names) => {
    given = assignColours(names, given);
  };
  const awareness = (raw) => {
    let cached = null;
    raw.on("change", () => (cached = null));
    const states = () => {
      if (cached) return cached;
      const all = raw.getStates();
      seat([...all.values()].filter((s) => s.user && s.user.name).map((s) => String(s.user.name)));
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
