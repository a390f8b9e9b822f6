// The what-if panel: one change (a queue's weight, an app moved, an app's
// priority) sent to POST /api/v1/whatif with the console's admin session;
// the answer drawn as each queue's share over the horizon, without and with
// the change (uPlot, whose legend gives the values under the pointer), and
// the apps whose start or finish moves. Nothing live changes.
(function () {
  const panel = document.getElementById("whatif");
  if (!panel || !window.uPlot || !window.Slotwise) return;
  const $ = (id) => document.getElementById(id);
  const form = $("whatif-form"), kind = $("whatif-kind"), error = $("whatif-error"), result = $("whatif-result");
  const box = $("whatif-chart");
  const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  let weights = new Map();  // queue -> its live weight, to start the weight field from
  let chart = null;

  // Durations as the CLI says them (forecaster.seconds): "~40 s", "~3 min".
  const roughly = (s) => s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
  const ahead = (s) => s === null || s === undefined ? "-" : s === 0 ? "now" : `~${roughly(s)}`;
  // A point's time on the chart, exactly: "75 s", "2 min 30 s".
  const at = (s) => s < 120 ? `${+s.toFixed(1)} s` : `${Math.floor(s / 60)} min` + (s % 60 ? ` ${Math.round(s % 60)} s` : "");
  const pct = (x) => x === null || x === undefined ? "-" : `${(100 * x).toFixed(1)}%`;

  function options(select, items, keep) {
    const old = keep ?? select.value;
    select.replaceChildren(...items.map(([value, label]) => new Option(label, value)));
    if (items.some(([v]) => v === old)) select.value = old;
  }

  // The queues and apps to choose from, as the API has them now.
  let asked = 0;
  async function choices() {
    if (Date.now() - asked < 3000) return;
    asked = Date.now();
    try {
      const [queues, apps] = await Promise.all(["/api/v1/queues", "/api/v1/apps"].map(
        (u) => fetch(u, {credentials: "same-origin"}).then((r) => r.json())));
      const parents = new Set(queues.map((q) => q.parent).filter(Boolean));
      weights = new Map(queues.map((q) => [q.queue, q.weight]));
      const had = $("whatif-queue").value;
      options($("whatif-queue"), queues.filter((q) => q.parent).map((q) => [q.queue, q.queue]));
      options($("whatif-target"), queues.filter((q) => q.parent && !parents.has(q.queue)).map((q) => [q.queue, q.queue]));
      options($("whatif-app"), apps.map((a) => [a.id, `${a.name || a.id} (${a.queue})`]));
      if ($("whatif-queue").value !== had || !$("whatif-weight").value) chosenQueue();
      chosenApp();
    } catch (e) {  // the server is restarting: ask again in a moment
      asked = 0;
      setTimeout(() => { if (panel.open) choices(); }, 2000);
    }
  }

  function chosenQueue() {
    const w = weights.get($("whatif-queue").value);
    if (w !== undefined) $("whatif-weight").value = w;
  }

  function chosenApp() {
    // Start from the app's own queue and priority, as the apps table shows them.
    const row = document.querySelector(`#apps tr[data-app="${CSS.escape($("whatif-app").value)}"]`);
    if (!row) return;
    const p = row.querySelector(".app-priority");
    if (p && !$("whatif-priority").dataset.typed) $("whatif-priority").value = p.textContent.trim();
  }

  function shown() {
    for (const el of form.querySelectorAll(".whatif-for")) el.hidden = !el.dataset.kinds.split(" ").includes(kind.value);
  }

  function change() {
    const app = $("whatif-app").value;
    if (kind.value === "weight") return {set: `${$("whatif-queue").value}.weight=${$("whatif-weight").value.trim()}`};
    if (kind.value === "move") return {move: [app, $("whatif-target").value]};
    const n = $("whatif-priority").value.trim();
    return {priority: [app, /^-?\d+$/.test(n) ? parseInt(n, 10) : n]};
  }

  function say(line) {
    error.textContent = line;
    error.hidden = !line;
  }

  // Both sides on one time axis: the plays sample the same grid, but one
  // may end sooner (nothing left to run); past its end it has no points.
  function data(queues) {
    const t = [...new Set(queues.flatMap((q) => [...q.before, ...q.after].map((p) => p[0])))].sort((a, b) => a - b);
    const cols = [t];
    for (const q of queues) {
      for (const side of [q.before, q.after]) {
        const by = new Map(side.map(([x, y]) => [x, y]));
        cols.push(t.map((x) => by.has(x) ? by.get(x) : null));
      }
    }
    return cols;
  }

  function draw(out) {
    const queues = out.queues.filter((q) => [...q.before, ...q.after].some((p) => p[1] > 0));
    if (chart) { chart.destroy(); chart = null; }
    box.replaceChildren();
    if (!queues.length) {
      box.append(Object.assign(document.createElement("p"), {className: "muted", textContent: "No queue uses anything over the horizon."}));
      return;
    }
    const minutes = out.horizon_s >= 300;
    const series = [{label: "time ahead", value: (u, v) => v === null ? "-" : at(v)}];
    queues.forEach((q, i) => {
      const stroke = COLOURS[i % COLOURS.length];
      series.push({label: `${q.queue} without`, stroke, width: 1.5, dash: [6, 4], value: (u, v) => pct(v)},
                  {label: `${q.queue} with`, stroke, width: 2.2, value: (u, v) => pct(v)});
    });
    chart = new uPlot({
      width: Math.max(box.clientWidth, 200), height: 260, series,
      scales: {x: {time: false}, y: {range: [0, 1]}},
      axes: [{label: minutes ? "minutes from now" : "seconds from now",
              incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200],
              values: (u, ticks) => ticks.map((v) => minutes ? +(v / 60).toFixed(1) : v)},
             {label: "share of the cluster", size: 50, values: (u, ticks) => ticks.map((v) => `${Math.round(100 * v)}%`)}],
      legend: {live: true, markers: {dash: (u, i) => u.series[i].dash ? "dashed" : "solid"}},  // as drawn
    }, data(queues), box);
  }

  function table(out) {
    const body = $("whatif-apps").querySelector("tbody");
    const moved = out.apps.filter((r) => r.changed);
    body.replaceChildren(...moved.map((r) => {
      const tr = document.createElement("tr");
      tr.dataset.app = r.app;
      const cells = [[r.app, "app"], [r.queue, "queue"],
                     [`${ahead(r.start_before)} → ${ahead(r.start_after)}`, "start"],
                     [`${ahead(r.finish_before)} → ${ahead(r.finish_after)}`, "finish"]];
      for (const [text, cls] of cells) tr.append(Object.assign(document.createElement("td"), {textContent: text, className: cls}));
      const why = [r.why_before && `without: ${r.why_before}`, r.why_after && `with: ${r.why_after}`].filter(Boolean).join("; ");
      if (why) tr.title = why;
      return tr;
    }));
    $("whatif-apps").hidden = !moved.length;
    $("whatif-no-apps").hidden = !!moved.length;
    return moved.length;
  }

  async function run(ev) {
    ev.preventDefault();
    const button = $("whatif-run");
    button.disabled = true;
    button.textContent = "Playing...";
    say("");
    try {
      const out = await Slotwise.post("/api/v1/whatif", {...change(), horizon_s: parseFloat($("whatif-horizon").value)});
      if (out.error) throw new Error(out.error);
      result.hidden = false;
      const n = table(out);
      $("whatif-summary").textContent = `${out.change}, played ${roughly(out.horizon_s)} ahead: ` +
        `${n} app${n === 1 ? " starts or finishes" : "s start or finish"} sooner or later; it took ${out.cpu_ms} ms ` +
        "of CPU. Nothing live changed.";
      draw(out);
    } catch (e) {
      say(`What-if refused: ${e.message}`);
    } finally {
      button.disabled = false;
      button.textContent = "Play it forward";
    }
  }

  kind.addEventListener("change", shown);
  $("whatif-queue").addEventListener("change", chosenQueue);
  $("whatif-app").addEventListener("change", () => { delete $("whatif-priority").dataset.typed; chosenApp(); });
  $("whatif-priority").addEventListener("input", (ev) => { ev.target.dataset.typed = "1"; });
  panel.addEventListener("toggle", () => { if (panel.open) choices(); });
  if (panel.open) choices();  // opened before this script ran (a quick click while the page loads)
  form.addEventListener("pointerenter", choices);
  form.addEventListener("submit", run);
  // The chart follows its box's width (the window's, 1400 px or 900 px alike).
  new ResizeObserver(() => { if (chart) chart.setSize({width: Math.max(box.clientWidth, 200), height: 260}); }).observe(box);
  shown();
})();
