// Posts from the editor page: form-encoded, with Django's CSRF token, answered in JSON.

function csrfToken() {
  const input = document.querySelector("input[name=csrfmiddlewaretoken]");
  return input ? input.value : "";
}

/** `fields`: name -> value, or a list of values sent under the same name (Django's getlist). */
export async function postForm(url, fields) {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
  }
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
