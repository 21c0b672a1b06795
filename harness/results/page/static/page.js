"use strict";
/* The query explorer of report.html. Data comes from <script type="application/json"> blocks, or
   from side files (report-data/*.js) that set window.__harnessReport. Every text from the data is
   put on the page with textContent or an attribute, never parsed as markup. */
(function () {
  const PAGE = 100;
  const $ = (id) => document.getElementById(id);
  function json(id) { const el = $(id); return el ? JSON.parse(el.textContent) : null; }
  const side = window.__harnessReport || {};
  const head = json("report-head") || side.head;
  const parts = json("report-details") || side.parts || [];
  if (!head) return;
  parts.sort((a, b) => a.lo - b.lo);
  const Q = head.q, S = head.s, base = head.baseline, n = Q.id.length;
  const byId = new Map(Q.id.map((q, i) => [q, i]));
  const st = { r: head.first, m: head.metrics[0], tag: -1, text: "", key: "delta", dir: 1, shown: PAGE, open: -1 };
  let order = [];

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function score(r, i) { const c = S[r] && S[r][st.m]; const v = c ? c[i] : null; return typeof v === "number" ? v : null; }
  function delta(i) {
    if (!base || st.r === base) return null;
    const a = score(st.r, i), b = score(base, i);
    return a === null || b === null ? null : a - b;
  }
  function fmt(v) { return v === null ? "–" : v.toFixed(4); }
  function fmtDelta(v) { return v === null ? "–" : (v > 0 ? "+" : "") + v.toFixed(4); }
  function cls(v) { return v === null ? "" : v > 0 ? "win" : v < 0 ? "loss" : "tie"; }

  // ------------------------------------------------------------------ list
  function compute() {
    const text = st.text.toLowerCase();
    const keep = [];
    for (let i = 0; i < n; i++) {
      if (st.tag >= 0 && Q.tags[i].indexOf(st.tag) < 0) continue;
      if (text && Q.id[i].toLowerCase().indexOf(text) < 0 && Q.text[i].toLowerCase().indexOf(text) < 0) continue;
      keep.push(i);
    }
    const key = st.key, dir = st.dir;
    const val = key === "delta" ? (base && st.r !== base ? delta : (i) => score(st.r, i))
      : key === "score" ? (i) => score(st.r, i) : key === "base" ? (i) => score(base, i) : null;
    if (val) {
      const v = new Float64Array(n);
      for (const i of keep) { const x = val(i); v[i] = x === null ? NaN : x; }
      keep.sort((a, b) => {
        const x = v[a], y = v[b];
        if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y) || a - b;
        return (x - y) * dir || (Q.id[a] < Q.id[b] ? -1 : Q.id[a] > Q.id[b] ? 1 : 0);
      });
    } else {
      keep.sort((a, b) => (Q.id[a] < Q.id[b] ? -dir : Q.id[a] > Q.id[b] ? dir : 0));
    }
    order = keep;
  }
  function row(i) {
    const tr = el("tr");
    tr.tabIndex = 0;
    tr.dataset.qid = Q.id[i];
    tr.dataset.index = i;
    const d = delta(i);
    tr.dataset.delta = d === null ? "" : String(d);
    tr.setAttribute("aria-selected", String(i === st.open));
    tr.appendChild(el("td", "did", Q.id[i]));
    const t = el("td", "t", Q.text[i]);
    tr.appendChild(t);
    const tg = el("td", "tg");
    for (const k of Q.tags[i]) tg.appendChild(el("span", "tag", head.tags[k]));
    tr.appendChild(tg);
    if (base && st.r !== base) tr.appendChild(el("td", "n nb", fmt(score(base, i))));
    tr.appendChild(el("td", "n", fmt(score(st.r, i))));
    if (base && st.r !== base) tr.appendChild(el("td", "n " + cls(d), fmtDelta(d)));
    return tr;
  }
  function header() {
    const tr = el("tr");
    const cols = [["id", "query"], [null, "text"], [null, "tags"]];
    if (base && st.r !== base) cols.push(["base", base]);
    cols.push(["score", st.r]);
    if (base && st.r !== base) cols.push(["delta", "Δ " + st.m]);
    for (const [key, label] of cols) {
      const th = el("th");
      th.scope = "col";
      th.className = label === "tags" ? "tg" : key === "base" ? "n nb" : key === "score" || key === "delta" ? "n" : "";
      if (key) {
        const b = el("button", null, label);
        b.type = "button";
        b.dataset.sort = key;
        b.addEventListener("click", () => sortBy(key));
        th.appendChild(b);
        if (st.key === key) th.setAttribute("aria-sort", st.dir > 0 ? "ascending" : "descending");
      } else th.textContent = label;
      tr.appendChild(th);
    }
    return tr;
  }
  function render() {
    const thead = $("queries").tHead, body = $("queries").tBodies[0];
    thead.replaceChildren(header());
    const frag = document.createDocumentFragment();
    for (const i of order.slice(0, st.shown)) frag.appendChild(row(i));
    body.replaceChildren(frag);
    const shown = Math.min(st.shown, order.length);
    $("count").textContent = order.length + " of " + n + " queries" + (shown < order.length ? ", first " + shown + " shown" : "");
    $("more").hidden = shown >= order.length;
    drawPlot();
  }
  function refresh() { compute(); render(); }
  function sortBy(key) {
    if (st.key === key) st.dir = -st.dir;
    else { st.key = key; st.dir = key === "id" || key === "delta" ? 1 : -1; }
    st.shown = PAGE;
    refresh();
    const b = document.querySelector('#queries th button[data-sort="' + key + '"]');
    if (b) b.focus();
  }

  // ------------------------------------------------------------------ per-query difference plot
  function drawPlot() {
    const c = $("diffplot");
    if (!c || !c.getContext) return;
    const ok = base && st.r !== base;
    c.hidden = !ok;
    if (!ok) return;
    const ds = [];
    for (let i = 0; i < n; i++) { const d = delta(i); if (d !== null) ds.push([d, i]); }
    ds.sort((a, b) => a[0] - b[0]);
    c._order = ds;
    const w = c.clientWidth || 600, h = 160, ratio = window.devicePixelRatio || 1;
    c.width = Math.round(w * ratio); c.height = Math.round(h * ratio);
    const g = c.getContext("2d");
    g.scale(ratio, ratio);
    g.clearRect(0, 0, w, h);
    let lo = 0, hi = 0;
    for (const [d] of ds) { if (d < lo) lo = d; if (d > hi) hi = d; }
    const span = Math.max(hi - lo, 1e-9), y0 = 8 + (h - 16) * hi / span, bw = w / Math.max(ds.length, 1);
    ds.forEach(([d], k) => {
      g.fillStyle = d > 0 ? "#1a7f37" : d < 0 ? "#cf222e" : "#9a9a9a";
      const y = y0 - (h - 16) * d / span;
      g.fillRect(k * bw, Math.min(y, y0), Math.max(bw, 1), Math.max(Math.abs(y - y0), d === 0 ? 1 : 0.5));
    });
    g.fillStyle = "#444"; g.fillRect(0, y0, w, 1);
    const wins = ds.filter((x) => x[0] > 0).length, losses = ds.filter((x) => x[0] < 0).length;
    c.setAttribute("aria-label", st.r + " minus " + base + " on " + st.m + ": " + wins + " wins, " +
      (ds.length - wins - losses) + " ties, " + losses + " losses (click a bar to open its query)");
    $("plotcap").textContent = st.r + " − " + base + ", " + st.m + ": " + wins + " wins, " +
      (ds.length - wins - losses) + " ties, " + losses + " losses; click a bar to open its query";
  }

  // ------------------------------------------------------------------ one query
  function partOf(i) {
    for (const p of parts) if (i >= p.lo && i < p.hi) return p;
    return null;
  }
  function grades(p, k) {
    const m = new Map(), j = p.j[k];
    for (let x = 0; x < j.length; x += 2) m.set(j[x], j[x + 1]);
    return m;
  }
  function docItem(p, d, rank, grade) {
    const li = el("li");
    li.dataset.doc = p.d.id[d];
    li.dataset.grade = grade === undefined ? "" : String(grade);
    li.appendChild(el("span", "rank", rank));
    li.appendChild(el("span", "did", p.d.id[d]));
    const g = grade === undefined ? el("span", "grade unjudged", "unjudged") : el("span", "grade g" + Math.min(Math.max(grade, 0), 3), "grade " + grade);
    g.title = grade === undefined ? "never judged for this query" : "judged grade " + grade;
    li.appendChild(g);
    if (p.d.t[d]) li.appendChild(el("div", "dt", p.d.t[d]));
    if (p.d.x[d]) li.appendChild(el("div", "dx", p.d.x[d]));
    return li;
  }
  function nuggets(nug, k, r, n) {
    const box = el("div", "nuggets");
    const b = nug.b[r][k], names = ["not covered", "partially supported", "supported"];
    box.appendChild(el("h5", null, "Nuggets its top " + n + " covers (" + nug.a[r][k] + " of " + n + " passages assessed)"));
    const ul = el("ul", "nugs");
    nug.t[k].forEach((t, x) => {
      const li = el("li", "nug n" + b[x], t);
      li.title = (nug.v[k][x] ? "vital" : "okay") + ": " + names[b[x]];
      if (nug.v[k][x]) li.classList.add("vital");
      ul.appendChild(li);
    });
    box.appendChild(ul);
    return box;
  }
  function column(p, k, i, r, g) {
    const col = el("section", "col");
    col.dataset.retriever = r;
    col.appendChild(el("h4", null, r + (r === base ? " (baseline)" : "")));
    const top = p.top[r][k], depth = p.n[r][k], first = p.fr[r][k];
    const v = score(r, i);
    let meta = st.m + " " + fmt(v);
    if (base && r !== base) { const b = score(base, i); meta += " (Δ " + fmtDelta(v === null || b === null ? null : v - b) + ")"; }
    meta += " · " + (depth === 0 ? "no ranking for this query" : first ? "first relevant at rank " + first : "no relevant document in its " + depth);
    const mt = el("div", "meta", meta);
    mt.dataset.firstRelevant = String(first);
    col.appendChild(mt);
    if (p.nug && p.nug.t[k].length) col.appendChild(nuggets(p.nug, k, r, top.length));
    const ol = el("ol", "docs");
    top.forEach((d, x) => ol.appendChild(docItem(p, d, x + 1, g.get(d))));
    col.appendChild(ol);
    const rel = p.rel[k], ranks = p.rr[r][k], shown = new Set(top);
    const missed = rel.map((d, x) => [d, ranks[x]]).filter(([d]) => !shown.has(d));
    if (missed.length) {
      const box = el("div", "missed");
      box.appendChild(el("h5", null, "Relevant, not in its top " + top.length + " (" + missed.length + ")"));
      const ml = el("ol", "docs");
      for (const [d, rk] of missed) ml.appendChild(docItem(p, d, rk ? rk : ">" + depth, g.get(d)));
      box.appendChild(ml);
      col.appendChild(box);
    }
    return col;
  }
  function open(i, focus) {
    const box = $("detail");
    const p = partOf(i);
    st.open = i;
    box.replaceChildren();
    box.hidden = false;
    box.dataset.qid = Q.id[i];
    const h = el("h3", null, "Query " + Q.id[i]);
    h.tabIndex = -1;
    box.appendChild(h);
    box.appendChild(el("div", "qtext", Q.text[i]));
    if (!p || !head.ranked.length) {
      box.appendChild(el("p", "note", "No rankings stored for this folder."));
    } else {
      const k = i - p.lo, g = grades(p, k);
      const names = [base, st.r].concat(head.ranked).filter((r, x, a) => r && head.ranked.indexOf(r) >= 0 && a.indexOf(r) === x);
      const cols = el("div", "cols");
      for (const r of names) cols.appendChild(column(p, k, i, r, g));
      box.appendChild(cols);
    }
    box.appendChild(el("p", "keys", "Esc closes · j / k or ↓ / ↑ move through the list · Enter opens"));
    for (const tr of $("queries").tBodies[0].rows) tr.setAttribute("aria-selected", String(Number(tr.dataset.index) === i));
    const want = "#q=" + encodeURIComponent(Q.id[i]) + "&r=" + encodeURIComponent(st.r) + "&m=" + encodeURIComponent(st.m);
    if (location.hash !== want) history.replaceState(null, "", want);
    if (focus) { h.focus({ preventScroll: true }); box.scrollIntoView({ block: "start" }); }
  }
  function close() {
    const i = st.open;
    $("detail").hidden = true;
    st.open = -1;
    history.replaceState(null, "", "#explorer");
    const tr = document.querySelector('#queries tbody tr[data-index="' + i + '"]');
    if (tr) { tr.setAttribute("aria-selected", "false"); tr.focus(); }
  }

  // ------------------------------------------------------------------ controls, keys, links
  function fill(sel, values, value) {
    sel.replaceChildren(...values.map((v) => { const o = el("option", null, v[1]); o.value = v[0]; return o; }));
    sel.value = value;
  }
  function fromHash() {
    const h = location.hash.replace(/^#/, "");
    if (!/^q=/.test(h)) return;
    const a = new URLSearchParams(h);
    const r = a.get("r"), m = a.get("m"), q = a.get("q");
    if (r && S[r]) { st.r = r; $("retriever").value = r; }
    if (m && head.metrics.indexOf(m) >= 0) { st.m = m; $("metric").value = m; }
    refresh();
    if (q !== null && byId.has(q)) open(byId.get(q), true);
  }
  function rows() { return Array.from($("queries").tBodies[0].rows); }
  function move(step) {
    const all = rows();
    if (!all.length) return;
    let at = all.indexOf(document.activeElement);
    if (at < 0) at = all.findIndex((tr) => Number(tr.dataset.index) === st.open);
    const next = Math.min(Math.max(at + step, 0), all.length - 1);
    if (at + step >= all.length && !$("more").hidden) { st.shown += PAGE; render(); return move(step); }
    all[next].focus();
    all[next].scrollIntoView({ block: "nearest" });
    if (st.open >= 0) open(Number(all[next].dataset.index), false);
  }
  function setup() {
    fill($("retriever"), head.retrievers.map((r) => [r, r + (r === base ? " (baseline)" : "")]), st.r);
    fill($("metric"), head.metrics.map((m) => [m, m]), st.m);
    fill($("tag"), [["-1", "all tags"]].concat(head.tags.map((t, k) => [String(k), t])), "-1");
    $("tag").disabled = !head.tags.length;
    $("retriever").addEventListener("change", (e) => { st.r = e.target.value; st.shown = PAGE; refresh(); if (st.open >= 0) open(st.open); });
    $("metric").addEventListener("change", (e) => { st.m = e.target.value; st.shown = PAGE; refresh(); if (st.open >= 0) open(st.open); });
    $("tag").addEventListener("change", (e) => { st.tag = Number(e.target.value); st.shown = PAGE; refresh(); });
    $("search").addEventListener("input", (e) => { st.text = e.target.value; st.shown = PAGE; refresh(); });
    $("more").addEventListener("click", () => { st.shown += PAGE; render(); });
    $("queries").tBodies[0].addEventListener("click", (e) => {
      const tr = e.target.closest("tr");
      if (tr) open(Number(tr.dataset.index), true);
    });
    $("diffplot").addEventListener("click", (e) => {
      const c = $("diffplot"), ds = c._order || [];
      if (!ds.length) return;
      const k = Math.floor((e.offsetX / c.clientWidth) * ds.length);
      open(ds[Math.min(Math.max(k, 0), ds.length - 1)][1], true);
    });
    document.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target, typing = t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
      if (e.key === "Escape") { if (st.open >= 0) { e.preventDefault(); close(); } return; }
      if (typing) return;
      if (e.key === "/") { e.preventDefault(); $("search").focus(); }
      else if (e.key === "j" || e.key === "ArrowDown") { if (t && t.closest && t.closest("#queries tbody")) { e.preventDefault(); move(1); } else if (e.key === "j") move(1); }
      else if (e.key === "k" || e.key === "ArrowUp") { if (t && t.closest && t.closest("#queries tbody")) { e.preventDefault(); move(-1); } else if (e.key === "k") move(-1); }
      else if ((e.key === "Enter" || e.key === " ") && t && t.dataset && t.dataset.index !== undefined && t.tagName === "TR") {
        e.preventDefault(); open(Number(t.dataset.index), false);
      }
    });
    // the same document in every ranking lights up under the pointer (or focus)
    const same = (e) => {
      const li = e.target.closest && e.target.closest("#detail li[data-doc]");
      for (const x of document.querySelectorAll("#detail li.same")) x.classList.remove("same");
      if (!li) return;
      for (const x of document.querySelectorAll("#detail li[data-doc]")) if (x.dataset.doc === li.dataset.doc) x.classList.add("same");
    };
    $("detail").addEventListener("mouseover", same);
    window.addEventListener("hashchange", fromHash);
    $("explorer-ui").hidden = false;
    refresh();
    fromHash();
    document.body.dataset.ready = "1";
  }
  setup();
})();
