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
  // A choice made before this script ran (the page still loading) counts too.
  for (const el of state.querySelectorAll(CONTROLS.join(","))) {
    const was = el.tagName === "SELECT" ? ([...el.options].find((o) => o.defaultSelected) || el.options[0] || {}).value
      : el.defaultValue;
    if (el.value !== was) remember({target: el});
  }
  state.addEventListener("change", remember);
  state.addEventListener("input", remember);

  let drawn = null;  // the state HTML last drawn

  // Which <details> (a preemption round, the nodes) the operator opened or
  // closed: a redraw keeps them so.
  const opened = new Map();
  state.addEventListener("toggle", (ev) => {
    const k = ev.target.dataset && ev.target.dataset.key;
    if (k) opened.set(k, ev.target.open);
  }, true);

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
      for (const d of state.querySelectorAll("details[data-key]")) {
        if (opened.has(d.dataset.key)) d.open = opened.get(d.dataset.key);
      }
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

  // An admin call with the console's session (the cookie and the CSRF header
  // a cross-site form cannot send); the API's "detail" is the error's message.
  async function send(method, url, body, headers) {
    const r = await fetch(url, {
      method, credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-Slotwise-CSRF": "1", ...(headers || {})},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.detail || r.statusText);
    return data;
  }
  const post = (url, body) => send("POST", url, body);
  window.Slotwise = {post, send};  // the what-if and shadow panels send with the same session

  // The "why" of an app: the service's explain answer, in a dialog.
  const dialog = document.getElementById("explain");
  const body = document.getElementById("explain-body");
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };
  const amount = (a) => !a ? "-" : ("map_slots" in a ? `${a.map_slots} maps, ${a.reduce_slots} reduces`
                                                     : `${Math.round(a.memory_mb)} MB, ${a.vcores} vcores`);
  // A fair share in the dimensions it is shared in, as the Queues table
  // says it: YARN's fair and fifo policies share memory only (vcores 0).
  const shared = (a) => (!a || "map_slots" in a || a.vcores) ? amount(a)
    : `${Math.round(a.memory_mb)} MB (memory only: its queue shares memory, as YARN's fair and fifo policies do)`;
  const stamp = (t) => new Date(t * 1000).toLocaleTimeString();
  const KNOWN = new Set(["id", "name", "user", "queue", "state", "running_containers", "pending_containers",
                         "usage", "fair_share", "holds", "preempting", "preempted_recently"]);

  function list(title, items, line) {
    if (!items || !items.length) return;
    body.append(el("h4", title));
    const ul = el("ul");
    for (const x of items) ul.append(el("li", line(x)));
    body.append(ul);
  }

  function showExplain(x) {
    body.replaceChildren();
    document.getElementById("explain-title").textContent = `Why: ${x.name || x.id}`;
    body.append(el("p", `${x.id} of ${x.user} in ${x.queue}: ${x.state}; ${x.running_containers} running, ` +
                        `${x.pending_containers} pending; usage ${amount(x.usage)}, fair share ${shared(x.fair_share)}.`,
                   "explain-state"));
    list("What holds it back", x.holds, (h) => h.message + (h.since ? ` (since ${stamp(h.since)})` : ""));
    if (x.holds && !x.holds.length) body.append(el("p", "Nothing holds it back now.", "explain-none"));
    list("Being taken back now", x.preempting,
         (p) => `${p.container} on ${p.node}, ${p.killed ? "killed" : "asked back"}: ${p.why || "-"}`);
    list("Preempted recently", x.preempted_recently,
         (p) => `${stamp(p.time)}: ${p.container} on ${p.node}, ${p.kill ? "killed" : "asked back"}: ${p.why || p.reason}`);
    // Whatever else the service says (standing, queue starvation, outcome):
    // its own sentence where it has one, else as it says it.
    for (const [k, v] of Object.entries(x)) {
      if (KNOWN.has(k) || v === null || v === undefined || (Array.isArray(v) && !v.length)) continue;
      const p = el("p", "", "explain-extra");
      const said = typeof v !== "object" ? String(v) : typeof v.message === "string" ? v.message : JSON.stringify(v);
      p.append(el("strong", `${k.replaceAll("_", " ")}: `), said);
      body.append(p);
    }
    const link = el("a", "the answer as JSON");
    link.href = `/api/v1/apps/${encodeURIComponent(x.id)}/explain`;
    body.append(el("p", "", "muted"));
    body.lastChild.append(link);
  }

  async function explain(app) {
    body.replaceChildren(el("p", "Asking the scheduler...", "muted"));
    document.getElementById("explain-title").textContent = `Why: ${app}`;
    if (!dialog.open) dialog.showModal();
    try {
      const r = await fetch(`/api/v1/apps/${encodeURIComponent(app)}/explain`, {credentials: "same-origin"});
      const data = await r.json().catch(() => ({}));
      if (!r.ok) throw new Error(data.detail || r.statusText);
      showExplain(data);
    } catch (e) {
      body.replaceChildren(el("p", `No answer: ${e.message}`, "error"));
    }
  }

  state.addEventListener("click", async (ev) => {
    const b = ev.target;
    if (!(b instanceof HTMLButtonElement)) return;
    const row = b.closest("tr");
    const app = b.dataset.app;
    if (b.classList.contains("why")) return explain(app);
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
