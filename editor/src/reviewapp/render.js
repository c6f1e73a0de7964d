// The review page's DOM, built from the review tool's structured result. Every piece of user text (notes,
// reasons, names, paths) goes in as a text node: never innerHTML, so hostile text stays text.

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

/** One change as the lines around it, the deleted text struck and the inserted text marked. */
export function changeView(change) {
  const block = el("div", { class: "context" });
  block.append(document.createTextNode(change.before || ""));
  if (change.deleted) block.append(el("del", { text: change.deleted }));
  if (change.inserted) block.append(el("ins", { text: change.inserted }));
  block.append(document.createTextNode(change.after || ""));
  return block;
}

/** A suggestion's card; `decide(choice, note)` is called by its buttons (absent: reading only). */
export function cardView(suggestion, decide) {
  const card = el("section", { class: "card", "data-suggestion": suggestion.id });
  const when = suggestion.created ? suggestion.created.slice(0, 16).replace("T", " ") : "";
  card.append(el("div", { class: "meta", text: `${suggestion.kind} by ${suggestion.author} · ${when}` }));
  if (suggestion.reason) card.append(el("div", { class: "reason", text: suggestion.reason }));
  for (const change of suggestion.changes || []) card.append(changeView(change));
  if (suggestion.status !== "pending") {
    const by = suggestion.decided_by ? ` by ${suggestion.decided_by}` : "";
    card.append(el("div", { class: "status", text: `${suggestion.status}${by}` }));
    return card;
  }
  if (!decide) return card;
  const note = el("input", { type: "text", placeholder: "Note (optional)", "aria-label": "Note", maxlength: "2000" });
  const accept = el("button", { class: "accept", type: "button", text: "Accept" });
  const reject = el("button", { class: "reject", type: "button", text: "Reject" });
  const buttons = [accept, reject];
  const run = (choice) => () => {
    for (const button of buttons) button.disabled = true;
    decide(choice, note.value).finally(() => {
      for (const button of buttons) button.disabled = false;
    });
  };
  accept.addEventListener("click", run("accept"));
  reject.addEventListener("click", run("reject"));
  card.append(el("div", { class: "actions" }, note, accept, reject));
  return card;
}

/** The whole page for one review result: a heading, why it is read-only (if so), the cards. */
export function reviewView(review, decide) {
  const root = el("div");
  root.append(el("h1", { text: `Suggestions in ${review.path}` }));
  if (!review.can_decide && review.why_not) root.append(el("p", { class: "status", text: review.why_not }));
  if (!review.suggestions.length) root.append(el("p", { class: "status", text: "Nothing is pending here." }));
  for (const suggestion of review.suggestions) {
    root.append(cardView(suggestion, review.can_decide ? (c, n) => decide(suggestion.id, c, n) : null));
  }
  return root;
}
