// The Lens Relay review page, an MCP Apps view (SEP-1865). The host hands it the review tool's result; its
// Accept and Reject call the app-only `review_decide` through the host, with the single-use key the result
// carried in `_meta` (never a credential: the host calls the server with the session's own).
import { App } from "@modelcontextprotocol/ext-apps/app-with-deps";
import { reviewView } from "./render.js";

const KEY_META = "lensrelay/review";
const main = document.getElementById("review");
const app = new App({ name: "Lens Relay review", version: "1.0.0" }, {});
let query = null;
let key = null;

function status(text, isError = false) {
  let line = document.getElementById("status");
  if (!line) {
    line = document.createElement("p");
    line.id = "status";
    main.prepend(line);
  }
  line.className = isError ? "status error" : "status";
  line.textContent = text;
}

function textOf(result) {
  return (result.content || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

// A list drawn again between a press and its release would swallow the click: the button under the pointer
// is replaced, and a click needs the press and the release on the same element. While a pointer is down in
// the page, the newest list waits for the release (`show` takes its query and key at once: the next decision
// needs them).
let pressed = false;
let draw = null;

function drawNow() {
  const pending = draw;
  draw = null;
  if (pending) pending();
}

document.addEventListener("pointerdown", () => { pressed = true; }, true);
for (const type of ["pointerup", "pointercancel"]) {
  document.addEventListener(type, () => {
    pressed = false;
    setTimeout(drawNow); // after the click this release makes
  }, true);
}

function show(result, said) {
  const review = result.structuredContent;
  if (result.isError || !review || !Array.isArray(review.suggestions)) {
    status(textOf(result) || "The suggestions could not be shown.", true);
    return;
  }
  query = review.query;
  key = (result._meta && result._meta[KEY_META] && result._meta[KEY_META].key) || null;
  draw = () => {
    const typed = typedNotes();
    main.replaceChildren(reviewView(review, decide));
    restoreNotes(typed);
    if (said) status(said.text, said.isError);
  };
  if (!pressed) drawNow();
}

/** The notes being typed in the cards, by suggestion, and which one has the focus: the list is shown again
 * after every decision, and a note typed meanwhile in another card must not be lost. */
function typedNotes() {
  const notes = new Map();
  for (const card of main.querySelectorAll("section[data-suggestion]")) {
    const input = card.querySelector("input");
    if (input && (input.value || input === document.activeElement)) {
      notes.set(card.dataset.suggestion, { value: input.value, focused: input === document.activeElement });
    }
  }
  return notes;
}

function restoreNotes(notes) {
  for (const card of main.querySelectorAll("section[data-suggestion]")) {
    const input = card.querySelector("input");
    const kept = notes.get(card.dataset.suggestion);
    if (!input || !kept) continue;
    input.value = kept.value;
    if (kept.focused) input.focus();
  }
}

// One decision at a time: each needs the fresh key the list shown after the previous one carries.
let previous = Promise.resolve();

function decide(id, decision, note) {
  const next = previous.then(() => decideNow(id, decision, note));
  previous = next.catch(() => {});
  return next;
}

async function decideNow(id, decision, note) {
  const args = { suggestion: id, decision, note, app_key: key || "" };
  key = null; // single use, spent or not
  let said;
  try {
    const result = await app.callServerTool({ name: "review_decide", arguments: args });
    said = { text: textOf(result), isError: Boolean(result.isError) };
  } catch (error) {
    said = { text: `The decision could not be sent: ${error.message || error}`, isError: true };
  }
  // Shown again either way: what is pending now, and a fresh key.
  try {
    show(await app.callServerTool({ name: "review_suggestions", arguments: query }), said);
  } catch (error) {
    status(`${said.text} (the list could not be refreshed: ${error.message || error})`, true);
  }
}

app.ontoolresult = (result) => show(result, null);
app.connect().catch((error) => status(`Could not reach the chat client: ${error.message || error}`, true));
