// Keeps the page current and sends the admin actions through the REST API.
(function () {
  const state = document.getElementById("state");
  const status = document.getElementById("action-status");
  const every = 1000 * parseFloat(document.body.dataset.refresh || "2");

  // What the operator chose in a row and has not sent yet, by app and control:
  // a refresh redraws the rows and must not put the old value back.
  const chosen = new Map();
  const CONTROLS = [".move-target", ".priority-value"];
  const key = (el) => {
    const row = el.closest("tr[data-app]");
    const control = CONTROLS.find((c) => el.matches(c));
    return row && control ? `${row.dataset.app}\n${control}` : null;
  };
  const remember = (ev) => {
    const k = key(ev.target);
    if (k) chosen.set(k, ev.target.value);
  };
  state.addEventListener("change", remember);
  state.addEventListener("input", remember);

  let drawn = null;  // the state HTML last drawn

  function editing() {
    const el = document.activeElement;
    return el && state.contains(el) && /^(SELECT|INPUT)$/.test(el.tagName);
  }

  async function refresh() {
    if (editing()) return;  // not while the operator is choosing a queue or typing a priority
    try {
      const r = await fetch("/ui/state", {credentials: "same-origin"});
      if (!r.ok) return;
      const html = await r.text();
      // Unchanged: leave the rows alone (a redraw moves the button under the pointer).
      if (html === drawn || editing()) return;
      state.innerHTML = drawn = html;
      for (const control of CONTROLS) {
        for (const el of state.querySelectorAll(control)) {
          const k = key(el);
          if (!chosen.has(k)) continue;
          const v = chosen.get(k);
          if (el.tagName !== "SELECT" || [...el.options].some((o) => o.value === v)) el.value = v;
        }
      }
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
    const app = b.dataset.app;
    try {
      if (b.classList.contains("move")) {
        const queue = row.querySelector(".move-target").value;
        const out = await post(`/api/v1/apps/${encodeURIComponent(app)}/queue`, {queue});
        status.textContent = `Moved ${app} to ${out.queue}.`;
      } else if (b.classList.contains("set-priority")) {
        const priority = parseInt(row.querySelector(".priority-value").value, 10);
        const out = await post(`/api/v1/apps/${encodeURIComponent(app)}/priority`, {priority});
        status.textContent = `Priority of ${app} is now ${out.priority}.`;
      } else {
        return;
      }
      for (const c of CONTROLS) chosen.delete(`${app}\n${c}`);  // sent: the page shows the outcome
      b.blur();
      await refresh();
    } catch (e) {
      status.textContent = `Failed: ${e.message}`;
    }
  });

  setInterval(refresh, every);
})();
