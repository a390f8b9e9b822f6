// The shadow panel: its figures redrawn from /ui/shadow (server-rendered,
// escaped there) as the page refreshes, the chart's block kept as drawn; divergence over time drawn by uPlot
// from the figures' timeline (loaded here when first needed, so a page with
// no shadow does not fetch it); and, for an admin, start (a pasted candidate
// file), stop and promote (after a confirm), sent through the REST API with
// the console's session. An API refusal is one line in the panel.
(function () {
  const panel = document.getElementById("shadow");
  if (!panel) return;
  const $ = (id) => document.getElementById(id);
  const every = 1000 * parseFloat(document.body.dataset.refresh || "2");
  const box = $("shadow-chart");
  const UPLOT = "/static/vendor/uplot/uPlot.iife.min.js", UPLOT_CSS = "/static/vendor/uplot/uPlot.min.css";
  let chart = null, drawnTimeline = null, drawnHtml = null, loading = null;
  const opened = new Map();  // the diff's <details>, opened or closed by the operator: a redraw keeps it so

  const pct = (x) => x === null || x === undefined ? "-" : `${(100 * x).toFixed(x && x < 0.1 ? 1 : 0)}%`;

  function say(line) {
    $("shadow-said").textContent = line;
    $("shadow-said").hidden = !line;
  }

  // The API's error as one line: its first, and how many more it gave.
  function refuse(what, e) {
    const lines = String(e.message || e).split("\n").filter(Boolean);
    const more = lines.length > 1 ? ` (and ${lines.length - 1} more)` : "";
    $("shadow-error").textContent = line(`${what}: ${lines[0] || "no answer"}${more}`);
    $("shadow-error").hidden = false;
    say("");
  }
  const line = (text) => text.replace(/\s+/g, " ");
  const clear = () => { $("shadow-error").hidden = true; $("shadow-error").textContent = ""; };

  function uplot() {
    if (window.uPlot) return Promise.resolve();
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        if (!document.querySelector(`link[href="${UPLOT_CSS}"]`)) {
          document.head.append(Object.assign(document.createElement("link"), {rel: "stylesheet", href: UPLOT_CSS}));
        }
        const s = Object.assign(document.createElement("script"), {src: UPLOT});
        s.onload = resolve;
        s.onerror = () => { loading = null; reject(new Error("the chart's script did not load")); };
        document.head.append(s);
      });
    }
    return loading;
  }

  // [t, compared, diverged] samples: per interval, the share of the heartbeats
  // compared in it that diverged; and the share since the start.
  function columns(timeline) {
    const t = [], step = [], total = [], counts = [];
    timeline.forEach(([x, c, d], i) => {
      const [, c0, d0] = i ? timeline[i - 1] : [x, 0, 0];
      t.push(x);
      step.push(i && c > c0 ? (d - d0) / (c - c0) : null);
      total.push(c ? d / c : null);
      counts.push([d - d0, c - c0, d, c]);
    });
    return {data: [t, step, total], counts};
  }

  async function draw(timeline) {
    const key = JSON.stringify(timeline);
    if (key === drawnTimeline) return;
    drawnTimeline = key;
    try {
      await uplot();
    } catch (e) {
      box.replaceChildren(Object.assign(document.createElement("p"), {className: "muted", textContent: e.message}));
      return;
    }
    const {data, counts} = columns(timeline);
    if (chart) {
      chart.counts = counts;
      chart.setData(data);
      return;
    }
    box.replaceChildren();
    chart = new uPlot({
      width: Math.max(box.clientWidth, 200), height: 200,
      series: [{label: "time"},
               {label: "diverged, each interval", stroke: "#d62728", width: 2, points: {show: true},
                value: (u, v, s, i) => v === null || i === null ? "-" : `${pct(v)} (${u.counts[i][0]} of ${u.counts[i][1]})`},
               {label: "since the start", stroke: "#555", width: 1.5, dash: [6, 4],
                value: (u, v, s, i) => v === null || i === null ? "-" : `${pct(v)} (${u.counts[i][2]} of ${u.counts[i][3]})`}],
      scales: {y: {range: (u, lo, hi) => [0, Math.max(0.05, Math.min(1, hi * 1.2 || 0.05))]}},
      axes: [{}, {label: "diverged", size: 50, values: (u, ticks) => ticks.map((v) => `${Math.round(100 * v)}%`)}],
      legend: {live: true},
    }, data, box);
    chart.counts = counts;
  }

  // After each redraw: the chart, and the controls that fit the state.
  function update() {
    const figures = $("shadow-figures");
    const state = figures.dataset.state, shown = figures.dataset.shown === "yes";
    $("shadow-timeline").hidden = !shown;
    if (shown) draw(JSON.parse(figures.dataset.timeline || "[]"));
    for (const d of figures.querySelectorAll("details[data-key]")) {
      if (opened.has(d.dataset.key)) d.open = opened.get(d.dataset.key);
    }
    if ($("shadow-stop")) {
      $("shadow-actions").hidden = $("shadow-stop").hidden = $("shadow-promote").hidden = state !== "running";
      if (state !== "running") $("shadow-confirm").hidden = true;
      $("shadow-start").querySelector("summary").firstChild.textContent =
        state === "running" ? "Replace the candidate… " : "Start a shadow… ";
    }
  }

  async function refresh() {
    try {
      const r = await fetch("/ui/shadow", {credentials: "same-origin"});
      if (!r.ok) return;
      const html = await r.text();
      if (html === drawnHtml) return;
      drawnHtml = html;
      // The new figures, with the chart's block as drawn (uPlot keeps its canvas and legend).
      const fresh = document.createElement("template");
      fresh.innerHTML = html;
      fresh.content.getElementById("shadow-timeline").replaceWith($("shadow-timeline"));
      $("shadow-figures").replaceWith(fresh.content);
      update();
    } catch (e) { /* the server is restarting: try again next time */ }
  }

  panel.addEventListener("toggle", (ev) => {
    const k = ev.target.dataset && ev.target.dataset.key;
    if (k && ev.target.closest("#shadow-figures")) opened.set(k, ev.target.open);
  }, true);
  // The chart follows its box's width (1400 px or 900 px alike).
  new ResizeObserver(() => { if (chart && box.clientWidth) chart.setSize({width: Math.max(box.clientWidth, 200), height: 200}); }).observe(box);

  if (panel.dataset.admin === "yes" && window.Slotwise) {
    const act = async (what, fn) => {
      clear();
      try {
        await fn();
      } catch (e) {
        refuse(what, e);
      }
      await refresh();
    };
    // Opened with nothing pasted yet: the live file, to change. Also when it
    // was opened before this script ran (a quick click while the page loads).
    const fill = async () => {
      if (!$("shadow-start").open || $("shadow-text").value) return;
      try {
        const r = await fetch("/api/v1/config", {credentials: "same-origin"});
        const live = await r.json();
        if (!$("shadow-text").value && live.content) $("shadow-text").value = live.content;
      } catch (e) { /* left empty: paste one */ }
    };
    $("shadow-start").addEventListener("toggle", fill);
    fill();
    $("shadow-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const name = $("shadow-name").value.trim() || "candidate.xml";
      const button = $("shadow-run");
      button.disabled = true;
      act("Shadow refused", async () => {
        const out = await Slotwise.send("POST", "/api/v1/shadow", {allocations: $("shadow-text").value},
                                        {"X-Slotwise-File-Name": encodeURIComponent(name)});
        say(`Started: ${out.file} decides beside the live file.`);
        $("shadow-start").open = false;
      }).finally(() => { button.disabled = false; });
    });
    $("shadow-stop").addEventListener("click", () => act("Stop failed", async () => {
      await Slotwise.send("DELETE", "/api/v1/shadow");
      say("Stopped the shadow.");
    }));
    $("shadow-promote").addEventListener("click", () => { clear(); $("shadow-confirm").hidden = false; });
    $("shadow-promote-no").addEventListener("click", () => { $("shadow-confirm").hidden = true; });
    $("shadow-promote-yes").addEventListener("click", () => act("Promote refused", async () => {
      $("shadow-confirm").hidden = true;
      const out = await Slotwise.send("POST", "/api/v1/shadow/promote", {});
      say(`Promoted: wrote ${out.candidate} as ${out.file} (the old one kept as ${out.backup}); ` +
          "the server applies it as any reload.");
    }));
  }

  drawnHtml = null;
  update();
  setInterval(refresh, every);
})();
