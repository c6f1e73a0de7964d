// The token-created page's copy buttons; a static file because the admin's CSP allows no inline script.
for (const button of document.querySelectorAll("button.copy")) {
  button.addEventListener("click", async function () {
    const field = document.getElementById(button.dataset.copy);
    field.select();
    try { await navigator.clipboard.writeText(field.value); } catch (error) { document.execCommand("copy"); }
    button.textContent = "Copied";
  });
}
