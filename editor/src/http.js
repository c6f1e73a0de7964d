// Posts from the editor page: form-encoded, with Django's CSRF token, answered in JSON.

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

export async function postForm(url, fields) {
  const body = new URLSearchParams(fields);
  const response = await fetch(url, {
    method: "POST",
    body,
    credentials: "same-origin",
    headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
  });
  let answer;
  try {
    answer = await response.json();
  } catch {
    answer = { ok: false, reason: `the server answered ${response.status}` };
  }
  if (!response.ok && answer.ok === undefined) answer.ok = false;
  return answer;
}
