// The Comments panel beside the editor: the note's comment threads (the text's format is in
// suggestions/markup/threads.py, the endpoints in suggestions/review/thread_views.py), open ones first,
// each with its passage, its comments, a reply box and Resolve / Reopen; a Comment button (and Mod-Alt-M)
// starts a thread on the selected text. The list is fetched again after each action and when the thread
// markup in the note changes: the note's Yjs text only schedules a look, at most once a second, so an
// assistant's reply over MCP shows without a reload and typing costs nothing more. Everything people and
// assistants wrote is put in with textContent, never as HTML.

import { ageOf } from "./critic.js";
import { postForm } from "./http.js";

// The note's thread markup is looked at, at most, once per CHECK_MS after its text changed; when it did
// change, the list is fetched, and again SETTLE_MS later (the rows the server derives from the text, a
// hand-typed comment's or a passage deleted, follow it by a moment). Replies only the rows hold (a detached
// thread whose comments left the text) are fetched every POLL_MS while the tab is in view.
export const CHECK_MS = 1000;
export const SETTLE_MS = [1500, 4000];
export const POLL_MS = 30000;
const PASSAGE_SHOWN = 200;

/** The thread id a mark carries in its metadata, or null. */
export function threadIdOf(mark) {
  const meta = mark.metadata;
  return meta && typeof meta.thread === "string" && meta.thread ? meta.thread : null;
}

/** The thread markup among `marks` (highlights and comments with a thread id) as one string, read with
 * `slice(from, to)`: when it is unchanged, so are the threads the text holds. */
export function threadSignature(marks, slice) {
  const parts = [];
  for (const mark of marks) {
    if ((mark.kind === "highlight" || mark.kind === "comment") && threadIdOf(mark)) parts.push(slice(mark.from, mark.to));
  }
  return parts.join("\u0000");
}

/** Where the thread is in the text: its highlight's passage; else the marks of the suggestion it discusses;
 * else its first comment (a detached thread whose comments stayed); null when the text holds none of it. */
export function anchorOf(marks, threadId, suggestion = null) {
  const highlight = marks.find((m) => m.kind === "highlight" && threadIdOf(m) === threadId);
  if (highlight) return { from: highlight.contentFrom, to: highlight.contentTo };
  const own = suggestion ? marks.find((m) => m.metadata && m.metadata.id === suggestion) : null;
  if (own) return { from: own.from, to: own.to };
  const comment = marks.find((m) => m.kind === "comment" && threadIdOf(m) === threadId);
  return comment ? { from: comment.from, to: comment.from } : null;
}

/** The Unicode code points in `text` before UTF-16 index `index` (the server counts code points). */
export function codePoints(text, index) {
  return Array.from(text.slice(0, index)).length;
}

/** The threads as the panel lists them: the open ones, then the resolved ones, each in the server's order. */
export function partition(threads) {
  return {
    open: threads.filter((t) => t.status !== "resolved"),
    resolved: threads.filter((t) => t.status === "resolved"),
  };
}

/** `from`..`to` without the white space at either end (a selection often takes a line's end). */
export function trimmedRange(text, from, to) {
  while (from < to && /\s/.test(text[from])) from += 1;
  while (to > from && /\s/.test(text[to - 1])) to -= 1;
  return [from, to];
}

/** Only the nodes and strings of `children` (a string becomes a text node: never parsed as HTML). */
function present(children) {
  return children.filter((child) => child !== null && child !== undefined && child !== false);
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "hidden") node.hidden = Boolean(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...present(children));
  return node;
}

function shortened(text, limit = PASSAGE_SHOWN) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}

function age(iso) {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? "" : ageOf(ms);
}

/** The panel, mounted on #lr-comments; null when the page has no place for it (a file that is not a note). */
export function startThreads(page, { marks }) {
  const root = document.getElementById("lr-comments");
  if (!root || !page.config.threadsUrl || !page.config.markdown) return null;
  const panel = new ThreadsPanel(page, root, marks);
  panel.start();
  return panel;
}

export class ThreadsPanel {
  constructor(page, root, marks) {
    this.page = page;
    this.config = page.config;
    this.root = root;
    this.marks = marks;
    this.canComment = Boolean(page.config.canComment);
    this.maxChars = 0;
    this.threads = new Map();
    this.items = new Map();
    this.expanded = new Set();
    this.current = null;
    this.timer = null;
    this.lastCheck = 0;
    this.seen = null;
    this.settle = [];
    this.loading = null;
    this.again = false;
    this.loadFailed = false;
    this.draft = null;
    this.linked = false;
  }

  start() {
    this.build();
    this.root.hidden = false;
    this.root.addEventListener("click", (event) => this.clicked(event));
    this.root.addEventListener("submit", (event) => this.submitted(event));
    this.root.addEventListener("keydown", (event) => this.keyed(event));
    // The 💬 badge the editor shows after a thread's passage (main.js) opens the thread here.
    this.page.root.addEventListener("click", (event) => {
      const badge = event.target.closest && event.target.closest("button.lr-thread-badge");
      if (badge) this.show(badge.dataset.thread, { focus: true });
    });
    setInterval(() => {
      if (document.visibilityState === "visible") this.refresh();
    }, POLL_MS);
    this.refresh();
  }

  build() {
    const head = el("div", { class: "lr-comments-head" }, el("h2", { text: "Comments" }));
    this.count = el("span", { class: "lr-comments-count", "aria-live": "polite" });
    head.append(this.count);
    if (this.canComment) {
      this.newButton = el("button", {
        type: "button",
        id: "lr-comment-new",
        text: "Comment",
        disabled: true,
        title: "Comment on the selected text (Ctrl-Alt-M)",
      });
      head.append(this.newButton);
    }
    this.status = el("p", { class: "lr-comments-status", role: "status", "aria-live": "polite" });
    this.newForm = null;
    if (this.canComment) {
      this.newPassage = el("q", { class: "lr-new-passage" });
      this.newText = el("textarea", { name: "text", rows: 3, "aria-label": "Your comment", placeholder: "Your comment…" });
      this.newForm = el(
        "form",
        { class: "lr-new-comment", id: "lr-comment-form", hidden: true },
        el("p", {}, "On ", this.newPassage),
        this.newText,
        el(
          "div",
          { class: "lr-form-buttons" },
          el("button", { type: "submit", text: "Comment" }),
          el("button", { type: "button", "data-cancel": "", text: "Cancel" }),
        ),
      );
    }
    this.empty = el("p", { class: "lr-comments-empty", text: "No comments on this note yet." });
    this.openList = el("ol", { class: "lr-thread-list", id: "lr-threads-open", "aria-label": "Open threads" });
    this.resolvedHeading = el("h3", { class: "lr-resolved-heading", hidden: true, text: "Resolved" });
    this.resolvedList = el("ol", { class: "lr-thread-list", id: "lr-threads-resolved", "aria-label": "Resolved threads" });
    this.root.replaceChildren(...present([head, this.status, this.newForm, this.empty, this.openList, this.resolvedHeading, this.resolvedList]));
  }

  say(message, level = "info") {
    this.status.textContent = message;
    this.status.dataset.level = level;
  }

  // -- keeping up with the note ----------------------------------------------------------------------------

  /** The note's text changed: look at its thread markup soon (at most once per CHECK_MS). Called for every
   * change of the Yjs text, so it only sets a timer. */
  schedule() {
    if (this.timer !== null) return;
    const wait = Math.max(0, this.lastCheck + CHECK_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.lastCheck = Date.now();
      this.check();
    }, wait);
  }

  check() {
    const state = this.page.view.state;
    const signature = threadSignature(this.marks(), (from, to) => state.sliceDoc(from, to));
    if (signature === this.seen) return;
    this.seen = signature;
    this.refresh();
    for (const timer of this.settle) clearTimeout(timer);
    this.settle = SETTLE_MS.map((ms) => setTimeout(() => this.refresh(), ms));
  }

  /** Fetch the list (one request at a time; asked again meanwhile, once more after it). */
  refresh() {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          const response = await fetch(this.config.threadsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
          if (!response.ok) {
            this.loadFailed = true;
            this.say(`The comments could not load: the server answered ${response.status}.`, "error");
            return;
          }
          this.render(await response.json());
          if (this.loadFailed) (this.loadFailed = false), this.say("");
        } while (this.again);
      } catch (error) {
        this.loadFailed = true;
        this.say(`The comments could not load: ${error.message}`, "error");
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  // -- the list ----------------------------------------------------------------------------------------------

  render(data) {
    this.maxChars = data.maxChars || 0;
    if (this.newText && this.maxChars) this.newText.maxLength = this.maxChars;
    const threads = data.threads || [];
    this.threads = new Map(threads.map((t) => [t.id, t]));
    for (const id of [...this.items.keys()]) if (!this.threads.has(id)) this.items.delete(id);
    const { open, resolved } = partition(threads);
    this.place(this.openList, open.map((t) => this.item(t)));
    this.place(this.resolvedList, resolved.map((t) => this.item(t)));
    this.resolvedHeading.hidden = !resolved.length;
    this.resolvedHeading.textContent = `Resolved (${resolved.length})`;
    this.empty.hidden = threads.length > 0;
    this.count.textContent = threads.length ? `${open.length} open${resolved.length ? `, ${resolved.length} resolved` : ""}` : "";
    for (const time of this.root.querySelectorAll("time[datetime]")) time.textContent = age(time.getAttribute("datetime"));
    this.openLinked();
  }

  /** A link ending in #thread-<id> (the inbox's mentions) opens the note at that thread, once it is listed and
   * the note synced. */
  openLinked() {
    const prefix = "#thread-";
    if (this.linked || !location.hash.startsWith(prefix)) return;
    const id = decodeURIComponent(location.hash.slice(prefix.length));
    if (!this.threads.has(id)) return;
    this.linked = true;
    const provider = this.page.provider;
    const go = () => setTimeout(() => this.goTo(id), 0);
    if (provider.synced) return go();
    const once = (synced) => {
      if (!synced) return;
      provider.off("sync", once);
      go();
    };
    provider.on("sync", once);
  }

  /** Put `nodes` in `list` in this order, moving nothing that is already in place (a reply being typed keeps
   * its focus). */
  place(list, nodes) {
    const now = [...list.children];
    if (now.length === nodes.length && now.every((node, i) => node === nodes[i])) return;
    list.replaceChildren(...nodes);
  }

  /** The thread's element, made once and brought up to date; its reply box is never rebuilt. */
  item(thread) {
    let item = this.items.get(thread.id);
    if (!item) {
      const node = el("li", { class: "lr-thread", dataset: { thread: thread.id } });
      const head = el("div", { class: "lr-thread-head" });
      const comments = el("ol", { class: "lr-thread-comments" });
      const actions = el("div", { class: "lr-thread-actions" });
      const reply = this.canComment ? this.replyForm(thread.id) : null;
      const body = el("div", { class: "lr-thread-body" }, comments, reply, actions);
      node.append(head, body);
      item = { node, head, body, comments, actions, reply, key: "" };
      this.items.set(thread.id, item);
    }
    const key = JSON.stringify(thread);
    if (item.key !== key) {
      item.key = key;
      this.fill(item, thread);
    }
    this.expand(item, thread);
    return item.node;
  }

  replyForm(threadId) {
    const text = el("textarea", { name: "text", rows: 2, placeholder: "Reply…", "aria-label": "Reply" });
    if (this.maxChars) text.maxLength = this.maxChars;
    return el(
      "form",
      { class: "lr-reply", dataset: { thread: threadId } },
      text,
      el("div", { class: "lr-form-buttons" }, el("button", { type: "submit", text: "Reply" })),
    );
  }

  fill(item, thread) {
    const { node, head, comments, actions, reply } = item;
    node.dataset.status = thread.status;
    node.classList.toggle("lr-thread-resolved", thread.status === "resolved");
    node.classList.toggle("lr-thread-detached", Boolean(thread.detached));
    const passage = thread.passage || "";
    head.replaceChildren(...present([
      el("button", {
        type: "button",
        class: "lr-thread-passage",
        title: thread.detached ? "Its passage was deleted from the note" : "Go to the passage in the note",
        text: passage ? `“${shortened(passage)}”` : "(no passage)",
      }),
      thread.suggestion ? el("span", { class: "lr-thread-tag", text: `on suggestion ${thread.suggestion}` }) : null,
      thread.detached ? el("span", { class: "lr-thread-tag lr-tag-detached", text: "detached: its passage was deleted" }) : null,
      thread.status === "resolved"
        ? el("span", { class: "lr-thread-tag lr-tag-resolved", text: thread.resolvedBy ? `resolved by ${thread.resolvedBy}` : "resolved" })
        : null,
      thread.status === "resolved"
        ? el("button", { type: "button", class: "lr-thread-expand", "aria-expanded": "false", text: "" })
        : null,
    ]));
    comments.replaceChildren(
      ...thread.comments.map((comment) =>
        el(
          "li",
          { class: "lr-thread-comment", dataset: { comment: comment.id, mine: comment.mine ? "true" : "false" } },
          el(
            "div",
            { class: "lr-comment-meta" },
            el("strong", { class: "lr-comment-author", text: comment.author }),
            " ",
            el("time", { datetime: comment.created, title: comment.created, text: age(comment.created) }),
          ),
          el("p", { class: "lr-comment-body", text: comment.body }),
        ),
      ),
    );
    if (reply) {
      const field = reply.querySelector("textarea");
      field.setAttribute("aria-label", `Reply to the thread on “${shortened(passage, 60)}”`);
      if (this.maxChars) field.maxLength = this.maxChars;
    }
    actions.replaceChildren();
    if (thread.canResolve) {
      const resolved = thread.status === "resolved";
      actions.append(
        el("button", {
          type: "button",
          class: resolved ? "lr-reopen" : "lr-resolve",
          dataset: { act: resolved ? "reopen" : "resolve", thread: thread.id },
          text: resolved ? "Reopen" : "Resolve",
        }),
      );
    }
  }

  /** Open threads show everything; a resolved one is folded unless its reader unfolded it. */
  expand(item, thread) {
    const folded = thread.status === "resolved" && !this.expanded.has(thread.id);
    item.body.hidden = folded;
    const toggle = item.head.querySelector(".lr-thread-expand");
    if (toggle) {
      const n = thread.comments.length;
      toggle.textContent = folded ? `Show ${n} comment${n === 1 ? "" : "s"}` : "Hide";
      toggle.setAttribute("aria-expanded", String(!folded));
    }
  }

  /** Bring a thread into view in the panel and mark it as the current one. */
  show(threadId, { focus = false } = {}) {
    const item = this.items.get(threadId);
    if (!item) return;
    for (const other of this.root.querySelectorAll(".lr-thread-current")) other.classList.remove("lr-thread-current");
    item.node.classList.add("lr-thread-current");
    this.current = threadId;
    const thread = this.threads.get(threadId);
    if (thread && thread.status === "resolved" && !this.expanded.has(threadId)) {
      this.expanded.add(threadId);
      this.expand(item, thread);
    }
    item.node.scrollIntoView({ block: "nearest" });
    if (focus && item.reply) item.reply.querySelector("textarea").focus();
  }

  /** Move the editor's cursor to the thread's passage. */
  goTo(threadId) {
    const thread = this.threads.get(threadId);
    const anchor = anchorOf(this.marks(), threadId, thread ? thread.suggestion : null);
    this.show(threadId);
    if (!anchor) return this.say("Its passage is no longer in the note: the thread is kept here.");
    const view = this.page.view;
    view.dispatch({ selection: { anchor: anchor.from }, scrollIntoView: true });
    view.focus();
    this.say("");
  }

  // -- what people do ----------------------------------------------------------------------------------------

  clicked(event) {
    const target = event.target;
    const button = target.closest("button");
    if (button && button.dataset.act) return void this.act(button.dataset.act, button.dataset.thread, button);
    if (button && button.matches("[data-cancel]")) return void this.closeNew();
    if (button && button === this.newButton) return void this.openNew();
    const item = target.closest("li.lr-thread");
    if (!item) return;
    if (button && button.classList.contains("lr-thread-expand")) {
      const id = item.dataset.thread;
      if (this.expanded.has(id)) this.expanded.delete(id);
      else this.expanded.add(id);
      const thread = this.threads.get(id);
      if (thread) this.expand(this.items.get(id), thread);
      return;
    }
    if (button && button.classList.contains("lr-thread-passage")) return void this.goTo(item.dataset.thread);
    // Anywhere else on the thread but its reply box: to its passage (not while the reader selects words).
    if (button || target.closest("form, textarea, a")) return;
    const selection = window.getSelection();
    if (selection && !selection.isCollapsed && item.contains(selection.anchorNode)) return;
    this.goTo(item.dataset.thread);
  }

  submitted(event) {
    event.preventDefault();
    const form = event.target;
    if (form === this.newForm) return void this.sendNew();
    if (form.classList.contains("lr-reply")) return void this.reply(form);
  }

  keyed(event) {
    // Ctrl/Cmd-Enter sends a comment or reply; Escape leaves the new-comment box.
    const form = event.target.closest && event.target.closest("form");
    if (!form) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === "Escape" && form === this.newForm) {
      event.preventDefault();
      this.closeNew();
      this.page.view.focus();
    }
  }

  /** The editor's selection became empty or not: the Comment button follows (a comparison, then nothing). */
  selectionChanged(empty) {
    if (this.newButton && this.newButton.disabled !== empty) this.newButton.disabled = empty;
  }

  /** Open the box for a new thread on the selected text (the Comment button, Mod-Alt-M). */
  openNew() {
    if (!this.canComment || !this.newForm) return false;
    const state = this.page.view.state;
    const { from, to } = state.selection.main;
    const text = state.doc.toString();
    const [start, end] = trimmedRange(text, from, to);
    if (start === end) {
      this.say("Select the words to comment on first.", "error");
      return true;
    }
    const passage = text.slice(start, end);
    this.draft = { passage, near: codePoints(text, start) };
    this.newPassage.textContent = shortened(passage, 120);
    this.newForm.hidden = false;
    this.newText.focus();
    this.say("");
    return true;
  }

  closeNew() {
    if (!this.newForm) return;
    this.newForm.hidden = true;
    this.draft = null;
  }

  /** POST an action; a failed request is an answer too (shown in the status line by the caller). */
  async send(fields) {
    try {
      return await postForm(this.config.threadActionUrl, fields);
    } catch (error) {
      return { ok: false, reason: `the request failed (${error.message})` };
    }
  }

  async sendNew() {
    if (!this.draft) return;
    const text = this.newText.value.trim();
    if (!text) return this.say("Write the comment first.", "error");
    const submit = this.newForm.querySelector("button[type=submit]");
    submit.disabled = true;
    this.say("Commenting…");
    try {
      const answer = await this.send({
        action: "start",
        passage: this.draft.passage,
        near: String(this.draft.near),
        text,
      });
      if (!answer.ok) return this.say(`Not commented: ${answer.reason || "refused"}`, "error");
      this.newText.value = "";
      this.closeNew();
      // The words are a thread's passage now: leave the selection, a second Comment on them is refused.
      const view = this.page.view;
      if (!view.state.selection.main.empty) view.dispatch({ selection: { anchor: view.state.selection.main.to } });
      this.say("Comment added.", "success");
      await this.refresh();
      if (answer.thread) this.show(answer.thread.id);
    } finally {
      submit.disabled = false;
    }
  }

  async reply(form) {
    const field = form.querySelector("textarea");
    const text = field.value.trim();
    if (!text) return this.say("Write the reply first.", "error");
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    this.say("Replying…");
    try {
      const answer = await this.send({ action: "reply", thread: form.dataset.thread, text });
      if (!answer.ok) return this.say(`Not sent: ${answer.reason || "refused"}`, "error");
      field.value = "";
      this.say("Reply sent.", "success");
      await this.refresh();
    } finally {
      submit.disabled = false;
    }
  }

  async act(action, threadId, button) {
    button.disabled = true;
    try {
      const answer = await this.send({ action, thread: threadId });
      if (!answer.ok) return this.say(`Could not ${action}: ${answer.reason || "refused"}`, "error");
      this.say(action === "resolve" ? "Thread resolved." : "Thread open again.", "success");
      if (action === "resolve") this.expanded.delete(threadId);
      await this.refresh();
    } finally {
      button.disabled = false;
    }
  }
}
