// The document review page (templates/admin/suggestions/review/document.html): the view toggle, focus
// between marks and cards, and the poll that swaps in the server's re-rendered part. A static file, not
// an inline script: the admin's CSP allows scripts from 'self' only.
(function () {
  "use strict";
  const root = document.getElementById("document-review");
  const live = document.getElementById("review-live");
  const status = document.getElementById("live-status");
  let version = root.dataset.version;

  function currentView() {
    return document.querySelector("input[name=view]:checked").value;
  }
  function showView() {
    for (const panel of live.querySelectorAll(".note-view")) {
      panel.hidden = panel.dataset.view !== currentView();
    }
  }
  for (const radio of document.querySelectorAll("input[name=view]")) {
    radio.addEventListener("change", showView);
  }
  // Clicking a mark in the note highlights its card, and the other way round.
  live.addEventListener("click", function (event) {
    const mark = event.target.closest("[data-uid]");
    if (!mark || !mark.dataset.uid) return;
    for (const el of live.querySelectorAll(".focused")) el.classList.remove("focused");
    for (const el of live.querySelectorAll('[data-uid="' + CSS.escape(mark.dataset.uid) + '"]')) el.classList.add("focused");
  });

  async function poll() {
    try {
      const response = await fetch(root.dataset.stateUrl + "?since=" + encodeURIComponent(version), {
        credentials: "same-origin", headers: {"Accept": "application/json"}
      });
      if (response.ok) {
        const state = await response.json();
        if (state.version !== version && typeof state.html === "string") {
          // Keep what the reviewer is typing (a note, a changed text) and the parts they opened across
          // the refresh.
          const typed = {}, opened = new Set();
          for (const area of live.querySelectorAll("textarea[id]")) {
            if (area.value !== area.defaultValue) typed[area.id] = area.value;
          }
          for (const details of live.querySelectorAll("details[id][open]")) opened.add(details.id);
          live.innerHTML = state.html;  // rendered and sanitized by the server, as on first load
          for (const area of live.querySelectorAll("textarea[id]")) {
            if (Object.prototype.hasOwnProperty.call(typed, area.id)) area.value = typed[area.id];
          }
          for (const details of live.querySelectorAll("details[id]")) {
            if (opened.has(details.id)) details.open = true;
          }
          version = state.version;
          root.dataset.version = version;
          showView();
          status.textContent = "Updated " + new Date().toLocaleTimeString() + ".";
        }
      } else {
        status.textContent = "Live updates paused (" + response.status + ").";
      }
    } catch (error) {
      status.textContent = "Live updates paused (offline).";
    }
    setTimeout(poll, Number(root.dataset.pollMs));
  }
  showView();
  setTimeout(poll, Number(root.dataset.pollMs));
})();
