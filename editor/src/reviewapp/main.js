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

function show(result, said) {
  const review = result.structuredContent;
  if (result.isError || !review || !Array.isArray(review.suggestions)) {
    status(textOf(result) || "The suggestions could not be shown.", true);
    return;
  }
  query = review.query;
  key = (result._meta && result._meta[KEY_META] && result._meta[KEY_META].key) || null;
  main.replaceChildren(reviewView(review, decide));
  if (said) status(said.text, said.isError);
}

async function decide(id, decision, note) {
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
