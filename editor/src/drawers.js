// The phone layout: on a narrow screen the note takes the full width and the file tree and the comments
// become drawers, opened from two buttons in the bar (which stays in view) and closed by Escape, a tap
// outside or the button again. The CSS (editor.css, "Phone layout") decides what is narrow; this module
// only adds the buttons and keeps one drawer open at a time.

const DRAWERS = [
  ["lr-tree", "☰ Files", "Show the folder's files"],
  ["lr-comments", "Comments", "Show the note's comments"],
];

export function startDrawers() {
  const bar = document.getElementById("lr-bar");
  if (!bar) return;
  const buttons = [];
  const close = () => {
    for (const [id] of DRAWERS) {
      const panel = document.getElementById(id);
      if (panel) panel.classList.remove("lr-drawer-open");
    }
    for (const button of buttons) button.setAttribute("aria-expanded", "false");
  };
  for (const [id, label, title] of DRAWERS) {
    const panel = document.getElementById(id);
    if (!panel) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "lr-drawer-toggle";
    button.dataset.drawer = id;
    button.textContent = label;
    button.title = title;
    button.setAttribute("aria-controls", id);
    button.setAttribute("aria-expanded", "false");
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      const opening = !panel.classList.contains("lr-drawer-open");
      close();
      if (!opening) return;
      panel.hidden = false; // the comments panel starts hidden until its threads are read
      panel.classList.add("lr-drawer-open");
      button.setAttribute("aria-expanded", "true");
    });
    buttons.push(button);
  }
  bar.prepend(...buttons);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
  });
  document.addEventListener("click", (event) => {
    if (!event.target.closest(".lr-drawer-open, .lr-drawer-toggle")) close();
  });
}
