// Keeps the page current and sends the admin actions through the REST API.
(function () {
  const state = document.getElementById("state");
  const status = document.getElementById("action-status");
  const every = 1000 * parseFloat(document.body.dataset.refresh || "2");

  async function refresh() {
    // Not while the operator is choosing a pool or typing a priority.
    const busy = document.activeElement && state.contains(document.activeElement) &&
      /^(SELECT|INPUT)$/.test(document.activeElement.tagName);
    if (busy) return;
    try {
      const r = await fetch("/ui/state", {credentials: "same-origin"});
      if (r.ok) state.innerHTML = await r.text();
    } catch (e) { /* the server is restarting: try again next time */ }
  }

  async function post(url, body) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-Slotwise-CSRF": "1"},
      body: JSON.stringify(body),
    });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.detail || r.statusText);
    return data;
  }

  state.addEventListener("click", async (ev) => {
    const b = ev.target;
    if (!(b instanceof HTMLButtonElement)) return;
    const row = b.closest("tr");
    const job = b.dataset.job;
    try {
      if (b.classList.contains("move")) {
        const pool = row.querySelector(".move-target").value;
        const out = await post(`/api/v1/jobs/${encodeURIComponent(job)}/pool`, {pool});
        status.textContent = `Moved ${job} to ${out.pool}.`;
      } else if (b.classList.contains("set-priority")) {
        const priority = parseInt(row.querySelector(".priority-value").value, 10);
        const out = await post(`/api/v1/jobs/${encodeURIComponent(job)}/priority`, {priority});
        status.textContent = `Priority of ${job} is now ${out.priority}.`;
      } else {
        return;
      }
      b.blur();
      await refresh();
    } catch (e) {
      status.textContent = `Failed: ${e.message}`;
    }
  });

  setInterval(refresh, every);
})();
