// CacheEval leaderboard page: client-side column sorting and the upload form.
// Plain JavaScript, no dependencies; the server renders every row, this file
// only reorders them and re-reads the table after an upload.
"use strict";

(function () {
  const table = document.getElementById("board");
  if (!table) {
    return;
  }
  let current = { key: "level_rank", dir: -1 }; // the server sends the board best level first

  function valueOf(row, key) {
    const cell = row.querySelector('td[data-key="' + key + '"]');
    if (!cell || cell.dataset.value === "") {
      return null;
    }
    return Number(cell.dataset.value);
  }

  // Sort the data rows by one numeric column; missing values always go last,
  // ties keep the server's board order (by rank) so the result is deterministic.
  function sortBy(key, dir) {
    const tbody = table.tBodies[0];
    const rows = Array.from(tbody.rows).filter((r) => r.dataset.id);
    rows.sort((a, b) => {
      const x = valueOf(a, key);
      const y = valueOf(b, key);
      const byId = Number(a.dataset.rank) - Number(b.dataset.rank);
      if (x === null || y === null) {
        return x === y ? byId : x === null ? 1 : -1;
      }
      return dir * (x - y) || byId;
    });
    rows.forEach((r) => tbody.appendChild(r));
    table.querySelectorAll("th[data-sort]").forEach((th) => {
      const state = th.dataset.sort === key ? (dir > 0 ? "ascending" : "descending") : "none";
      th.setAttribute("aria-sort", state);
    });
    current = { key: key, dir: dir };
  }

  table.querySelectorAll("th[data-sort] button").forEach((button) => {
    button.addEventListener("click", () => {
      const th = button.closest("th");
      const key = th.dataset.sort;
      const dir = current.key === key ? -current.dir : Number(th.dataset.first || 1);
      sortBy(key, dir);
    });
  });

  // Replace the table body with the server's current one, keeping the sort.
  async function refresh(newId) {
    const response = await fetch("/", { headers: { Accept: "text/html" } });
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = doc.querySelector("#board tbody");
    if (fresh) {
      table.tBodies[0].replaceWith(document.importNode(fresh, true));
      sortBy(current.key, current.dir);
    }
    const row = table.querySelector('tr[data-id="' + newId + '"]');
    if (row) {
      row.classList.add("new");
    }
  }

  const form = document.getElementById("upload-form");
  const status = document.getElementById("upload-status");
  if (!form || !status) {
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = form.elements.token.value.trim();
    const file = form.elements.file.files[0];
    status.className = "";
    if (!token || !file) {
      status.className = "error";
      status.textContent = "Give your token and choose a predictions file.";
      return;
    }
    // The token travels only in the Authorization header, never in the body.
    const data = new FormData();
    data.append("file", file, file.name);
    const name = form.elements.name.value.trim();
    const training = form.elements.training_data.value.trim();
    if (name) {
      data.append("name", name);
    }
    if (training) {
      data.append("training_data", training);
    }
    status.textContent = "Uploading and grading\u2026";
    let response;
    try {
      response = await fetch("/api/submissions", {
        method: "POST",
        headers: { Authorization: "Bearer " + token },
        body: data,
      });
    } catch (err) {
      status.className = "error";
      status.textContent = "Upload failed: " + err;
      return;
    }
    let body = {};
    try {
      body = await response.json();
    } catch (err) {
      body = {};
    }
    if (!response.ok) {
      status.className = "error";
      status.textContent =
        "Rejected (" + response.status + "): " + (body.error || response.statusText);
      return;
    }
    const fb = body.feedback;
    status.className = "ok";
    status.textContent = fb.released
      ? "Submission #" + body.id + " graded: " + fb.level.name + " (your best so far)."
      : "Submission #" + body.id + " graded: not above your best level (" +
        (fb.best_level ? fb.best_level.name : "none") + ").";
    form.elements.file.value = "";
    await refresh(body.id);
  });
})();
