// The per-pair viewer of `cacheeval view`: filters, sorts and pages the rows
// embedded in the page (JSON in #viewer-data; shape in cacheeval/reporting/viewer.py).
// Every text from the data reaches the page as a text node, never as HTML.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("viewer-data").textContent);
  const R = D.rows;
  const C = D.caches;
  const N = R.id.length;
  const S = (i) => (i < 0 ? null : D.strings[i]);
  const DEC_TEXT = { H: "HIT", M: "MISS", E: "ERROR", "-": "missing" };
  const ANY = "";

  // --- small DOM helpers (text only) ---
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const kid of kids) {
      if (kid === null || kid === undefined) continue;
      node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }
  const byId = (id) => document.getElementById(id);
  const fmt = (x) => (x === null || x === undefined ? "–" : x.toFixed(3));
  const thousands = (n) => n.toLocaleString("en-US");
  const slug = (s) => s.replace(/[^a-z]+/g, "-");

  // --- what a cache did on a row ---
  function outcome(c, i) {
    const d = C[c].dec[i];
    const y = R.bin[i];
    if (y === "?") return null;
    if (d === "E" || d === "-") return "error";
    if ((d === "H") !== (y === "H")) return d === "H" ? "false hit" : "missed hit";
    return "correct";
  }
  const served = (c, i) => C[c].dec[i] === "H";
  function disagree(i) {
    let hits = 0;
    for (let c = 0; c < C.length; c++) hits += served(c, i) ? 1 : 0;
    return hits > 0 && hits < C.length;
  }

  // --- filters ---
  const state = {};
  function resetState() {
    Object.assign(state, {
      domain: ANY, label: ANY, sub: ANY, kind: ANY, cache: ANY, outcome: ANY,
      disagree: false, text: "", sort: "order", page: 0,
    });
  }
  resetState();

  function distinct(column) {
    const seen = new Set();
    for (const i of column) if (i >= 0) seen.add(S(i));
    return [...seen].sort();
  }
  // Stress rows' subcategories are family/kind ("identity/city"): each family
  // also gets an option of its own ("identity/", every kind of it).
  function subOptions(subs) {
    const out = [];
    let family = null;
    for (const s of subs) {
      const cut = s.indexOf("/");
      const prefix = cut > 0 ? s.slice(0, cut + 1) : null;
      if (prefix && prefix !== family) out.push([prefix, prefix + " (every kind)"]);
      family = prefix;
      out.push([s, s]);
    }
    return out;
  }
  function subMatches(sub, wanted) {
    return wanted.endsWith("/") ? sub !== null && sub.startsWith(wanted) : sub === wanted;
  }
  function fillSelect(select, options, anyText) {
    select.replaceChildren(el("option", { value: ANY, text: anyText }));
    for (const [value, text] of options) select.append(el("option", { value, text }));
  }
  function setupFilters() {
    fillSelect(byId("f-domain"), distinct(R.domain).map((d) => [d, d]), "all domains");
    const labels = new Set(distinct(R.label));
    fillSelect(byId("f-label"),
      [["HIT", "should hit (HIT)"], ["MISS", "must miss (MISS)"]].concat(
        D.labels.filter((l) => labels.has(l)).map((l) => [l, l])), "all labels");
    fillSelect(byId("f-sub"), subOptions(distinct(R.sub)), "all subcategories");
    const kindsSeen = new Set(R.kind);
    fillSelect(byId("f-kind"),
      D.kinds.map((k, j) => [String(j), k]).filter(([j]) => kindsSeen.has(Number(j))),
      "anything");
    fillSelect(byId("f-cache"), C.map((c, j) => [String(j), c.name]), "any cache");
    fillSelect(byId("f-outcome"), D.outcomes.map((o) => [o, o]), "any outcome");
    const sort = byId("f-sort");
    sort.replaceChildren(
      el("option", { value: "order", text: "file order" }),
      el("option", { value: "score-desc", text: "score, highest first" }),
      el("option", { value: "score-asc", text: "score, lowest first" }));
  }
  function readFilters() {
    state.domain = byId("f-domain").value;
    state.label = byId("f-label").value;
    state.sub = byId("f-sub").value;
    state.kind = byId("f-kind").value;
    state.cache = byId("f-cache").value;
    state.outcome = byId("f-outcome").value;
    state.disagree = byId("f-disagree").checked;
    state.text = byId("f-text").value.trim().toLowerCase();
    state.sort = byId("f-sort").value;
  }
  function writeFilters() {
    byId("f-domain").value = state.domain;
    byId("f-label").value = state.label;
    byId("f-sub").value = state.sub;
    byId("f-kind").value = state.kind;
    byId("f-cache").value = state.cache;
    byId("f-outcome").value = state.outcome;
    byId("f-disagree").checked = state.disagree;
    byId("f-text").value = state.text;
    byId("f-sort").value = state.sort;
  }

  function keep(i) {
    if (state.domain !== ANY && S(R.domain[i]) !== state.domain) return false;
    if (state.label !== ANY) {
      if (state.label === "HIT" || state.label === "MISS") {
        if (R.bin[i] !== state.label[0]) return false;
      } else if (S(R.label[i]) !== state.label) return false;
    }
    if (state.sub !== ANY && !subMatches(S(R.sub[i]), state.sub)) return false;
    if (state.kind !== ANY && R.kind[i] !== Number(state.kind)) return false;
    if (state.outcome !== ANY) {
      if (state.cache !== ANY) {
        if (outcome(Number(state.cache), i) !== state.outcome) return false;
      } else {
        let any = false;
        for (let c = 0; c < C.length && !any; c++) any = outcome(c, i) === state.outcome;
        if (!any) return false;
      }
    }
    if (state.disagree && !disagree(i)) return false;
    if (state.text) {
      const hay = (R.id[i] + "\n" + S(R.qa[i]) + "\n" + S(R.qb[i])).toLowerCase();
      if (!hay.includes(state.text)) return false;
    }
    return true;
  }
  const sortCache = () => (state.cache === ANY ? 0 : Number(state.cache));
  function matches() {
    const out = [];
    for (let i = 0; i < N; i++) if (keep(i)) out.push(i);
    if (state.sort !== "order" && C.length) {
      const scores = C[sortCache()].score;
      const sign = state.sort === "score-desc" ? -1 : 1;
      out.sort((a, b) => {
        const x = scores[a], y = scores[b];
        if (x === null || y === null) return (x === null) - (y === null) || a - b;
        return sign * (x - y) || a - b;
      });
    }
    return out;
  }

  // --- the table ---
  let current = [];
  function header() {
    const row = el("tr", {},
      el("th", { class: "c-id", text: "Pair" }), el("th", { class: "c-domain", text: "Domain" }),
      el("th", { class: "c-label", text: "Label" }), el("th", { class: "c-kind", text: "What differs" }),
      el("th", { class: "c-queries", text: "Queries (a, b)" }));
    C.forEach((c, j) => row.append(el("th", { class: "num c-cache", "data-cache": String(j), text: c.name })));
    byId("pair-table").tHead.replaceChildren(row);
  }
  function decisionCell(c, i) {
    const d = C[c].dec[i];
    const o = outcome(c, i);
    const score = C[c].score[i];
    const cell = el("td", {
      class: "dec num" + (o ? " o-" + slug(o) : ""),
      "data-cache": String(c),
      "data-dec": d,
      "data-score": score === null ? "" : String(score),
      "data-outcome": o || "",
      title: C[c].name + (o ? ": " + o : "") + "; tier " + S(C[c].tier[i]),
    }, DEC_TEXT[d] + " ", el("small", { text: fmt(score) }));
    return cell;
  }
  function labelText(i) {
    const label = S(R.label[i]);
    const bin = R.bin[i] === "?" ? "unlabelled" : R.bin[i] === "H" ? "HIT" : "MISS";
    return label ? label + " (" + bin + ")" : bin;
  }
  function pairRow(i) {
    const tr = el("tr", { class: "pair", tabindex: "0", "data-i": String(i), "data-id": R.id[i] },
      el("td", { class: "id", text: R.id[i] }), el("td", { text: S(R.domain[i]) }),
      el("td", { text: labelText(i) }), el("td", { text: D.kinds[R.kind[i]] }),
      el("td", { class: "query-cell" },
        el("span", { class: "q", title: S(R.qa[i]) }, el("b", { text: "a" }), S(R.qa[i])),
        el("span", { class: "q", title: S(R.qb[i]) }, el("b", { text: "b" }), S(R.qb[i]))));
    for (let c = 0; c < C.length; c++) tr.append(decisionCell(c, i));
    const toggle = () => toggleDetail(tr, i);
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } });
    return tr;
  }
  function render() {
    const pages = Math.max(1, Math.ceil(current.length / D.page_size));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    const start = state.page * D.page_size;
    const shown = current.slice(start, start + D.page_size);
    byId("pair-table").tBodies[0].replaceChildren(...shown.map(pairRow));
    const count = byId("count");
    count.dataset.matches = String(current.length);
    count.dataset.page = String(state.page + 1);
    count.dataset.pages = String(pages);
    const of = current.length === N ? "" : " (filtered from " + thousands(N) + ")";
    const sorted = state.sort === "order" || !C.length ? "" : "; sorted by the score of " + C[sortCache()].name;
    count.textContent = current.length
      ? "Pairs " + thousands(start + 1) + "–" + thousands(start + shown.length) + " of " +
        thousands(current.length) + of + ", page " + (state.page + 1) + " of " + pages + sorted
      : "No pair matches these filters" + of;
    byId("first").disabled = byId("prev").disabled = state.page === 0;
    byId("next").disabled = byId("last").disabled = state.page >= pages - 1;
  }
  function refresh() {
    current = matches();
    state.page = 0;
    render();
  }

  // --- one pair in full ---
  function marked(text, spans) {
    const box = el("div", { class: "text" });
    let at = 0;
    for (let k = 0; spans && k + 1 < spans.length; k += 2) {
      const [s, e] = [spans[k], spans[k + 1]];
      if (s < at || e > text.length) continue;
      box.append(text.slice(at, s), el("mark", { text: text.slice(s, e) }));
      at = e;
    }
    box.append(text.slice(at));
    return box;
  }
  function part(what, body) {
    return el("div", { class: "part" }, el("div", { class: "what", text: what }), body);
  }
  function none(text) { return el("div", { class: "none", text }); }
  function side(i, s) {
    const hl = R.hl[i] || {};
    const box = el("div", { class: "side side-" + s },
      el("h3", { text: s === "a" ? "Stored request (a)" : "New request (b)" }));
    const sys = S(R["s" + s][i]);
    box.append(part("System prompt", sys === null ? none("none") : marked(sys, hl["s" + s])));
    const turns = R["c" + s][i];
    const other = R["c" + (s === "a" ? "b" : "a")][i] || [];
    if (turns) {
      for (let k = 0; k + 1 < turns.length; k += 2) {
        const t = k / 2;
        const only = k < other.length ? "" : " (only in " + s + ")";
        box.append(part("Turn " + (t + 1) + ": " + S(turns[k]) + only, marked(S(turns[k + 1]), hl["c" + t + s])));
      }
    } else box.append(part("Prior turns", none("none")));
    box.append(part("Query", marked(S(R["q" + s][i]), hl["q" + s])));
    const tools = S(R["t" + s][i]);
    if (tools === null) box.append(part("Tools", none("none")));
    else {
      let names = "";
      try { names = JSON.parse(tools).map((t) => t.name).join(", "); } catch (e) { names = ""; }
      box.append(part("Tools", el("details", {}, el("summary", { text: names || "definitions" }),
        el("pre", { class: "text tools", text: tools }))));
    }
    const expected = S(R["e" + s][i]);
    if (expected !== null) box.append(part("Expected answer", el("div", { class: "text", text: expected })));
    return box;
  }
  function detail(i) {
    const box = el("div", { class: "pair-detail" });
    box.append(el("div", { class: "meta" },
      el("span", { text: "Pair " + R.id[i] }), el("span", { text: "Domain: " + S(R.domain[i]) }),
      el("span", { text: "Label: " + labelText(i) }),
      el("span", { text: "Subcategory: " + (S(R.sub[i]) || "–") }),
      el("span", { text: "Difficulty: " + (S(R.difficulty[i]) || "–") })));
    const diffs = R.diffs[i];
    const list = el("ul", { class: "diffs" });
    for (let k = 0; k + 2 < diffs.length; k += 3) {
      const [a, b] = [S(diffs[k + 1]), S(diffs[k + 2])];
      const what = a === null && b === null ? "" : ": " + (a ?? "–") + " → " + (b ?? "–");
      list.append(el("li", {}, el("b", { text: D.kinds[diffs[k]] }), what));
    }
    if (!list.children.length) list.append(el("li", { text: "nothing detected" }));
    box.append(part("What differs", list));
    const rationale = S(R.rationale[i]);
    if (rationale !== null) box.append(part("Rationale", el("div", { class: "text", text: rationale })));
    box.append(el("div", { class: "sides" }, side(i, "a"), side(i, "b")));
    const table = el("table", { class: "decisions" }, el("tr", {},
      ...["Cache", "Decision", "Outcome", "Score", "Confidence", "Tier", "Error"].map((h) => el("th", { text: h }))));
    C.forEach((c, j) => {
      const o = outcome(j, i);
      const err = c.error[String(i)];
      table.append(el("tr", { "data-cache": String(j) },
        el("td", { text: c.name }), el("td", { text: DEC_TEXT[c.dec[i]] }),
        el("td", { class: o ? "o-" + slug(o) : "", text: o || "–" }),
        el("td", { class: "num", text: fmt(c.score[i]) }), el("td", { class: "num", text: fmt(c.conf[i]) }),
        el("td", { text: S(c.tier[i]) }), el("td", { text: err === undefined ? "" : S(err) })));
    });
    box.append(part("Decisions", table));
    return box;
  }
  function toggleDetail(tr, i) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("detail")) {
      next.remove();
      tr.classList.remove("open");
      return;
    }
    const cols = tr.children.length;
    tr.after(el("tr", { class: "detail", "data-i": String(i) }, el("td", { colspan: String(cols) }, detail(i))));
    tr.classList.add("open");
  }

  // --- the address: #cache=NAME&sub=identity/city&outcome=false%20hit ---
  // A report links to the pairs behind a number with such an address; the
  // address follows the filters, so a view can be copied and shared. Caches
  // and "what differs" are named, not numbered, so a link survives a page
  // with other caches.
  const LINK_KEYS = ["domain", "label", "sub", "kind", "cache", "outcome", "disagree", "text", "sort"];
  function optionValue(id, value) {
    for (const o of byId(id).options) if (o.value === value) return value;
    return null;
  }
  function linkValue(key, value) {
    if (key === "cache") {
      const j = C.findIndex((c) => c.name === value);
      return j < 0 ? null : String(j);
    }
    if (key === "kind") {
      const j = D.kinds.indexOf(value);
      return j < 0 ? null : optionValue("f-kind", String(j));
    }
    if (key === "disagree") return value === "1" || value === "true";
    if (key === "text") return value.trim().toLowerCase();
    return optionValue({ domain: "f-domain", label: "f-label", sub: "f-sub",
      outcome: "f-outcome", sort: "f-sort" }[key], value);
  }
  function stateLink() {
    const params = new URLSearchParams();
    for (const key of LINK_KEYS) {
      const v = state[key];
      if (v === ANY || v === false || (key === "sort" && v === "order")) continue;
      if (key === "cache") params.set(key, C[Number(v)].name);
      else if (key === "kind") params.set(key, D.kinds[Number(v)]);
      else params.set(key, v === true ? "1" : v);
    }
    return params.toString();
  }
  function syncAddress() {
    const link = stateLink();
    if (link === lastLink) return;
    lastLink = link;
    try {
      history.replaceState(null, "", link ? "#" + link : location.pathname + location.search);
    } catch (e) {
      // a browser that refuses it for a file page: the filters still apply
    }
  }
  let lastLink = null;
  // Returns whether the address named filters (else it is a plain anchor).
  function applyAddress() {
    const raw = location.hash.slice(1);
    if (!raw.includes("=")) return false;
    const params = new URLSearchParams(raw);
    const unknown = [];
    resetState();
    for (const [key, value] of params) {
      if (!LINK_KEYS.includes(key)) { unknown.push(key + "=" + value); continue; }
      const v = linkValue(key, value);
      if (v === null) unknown.push(key + "=" + value);
      else state[key] = v;
    }
    const note = byId("link-note");
    note.hidden = !unknown.length;
    note.textContent = unknown.length
      ? "This page has nothing for " + unknown.join(", ") + " from the address; the other filters apply."
      : "";
    lastLink = stateLink();
    writeFilters();
    refresh();
    return true;
  }

  // --- wiring ---
  setupFilters();
  header();
  const changed = () => { readFilters(); refresh(); syncAddress(); };
  byId("filters").addEventListener("change", changed);
  byId("f-text").addEventListener("input", changed);
  byId("filters").addEventListener("submit", (e) => e.preventDefault());
  byId("f-reset").addEventListener("click", () => {
    resetState(); writeFilters(); refresh(); syncAddress();
  });
  window.addEventListener("hashchange", () => {
    if (applyAddress()) byId("pairs").scrollIntoView();
  });
  byId("first").addEventListener("click", () => { state.page = 0; render(); });
  byId("prev").addEventListener("click", () => { state.page -= 1; render(); });
  byId("next").addEventListener("click", () => { state.page += 1; render(); });
  byId("last").addEventListener("click", () => { state.page = Number.MAX_SAFE_INTEGER; render(); });
  // A count in the summary opens the pairs behind it.
  for (const link of document.querySelectorAll("a.go")) {
    link.addEventListener("click", (e) => {
      e.preventDefault();
      resetState();
      const ds = link.dataset;
      if (ds.cache !== undefined) state.cache = ds.cache;
      if (ds.outcome !== undefined) state.outcome = ds.outcome;
      if (ds.kind !== undefined) state.kind = ds.kind;
      if (ds.sort !== undefined) state.sort = ds.sort;
      writeFilters();
      refresh();
      syncAddress();
      byId("pairs").scrollIntoView();
    });
  }
  if (applyAddress()) byId("pairs").scrollIntoView();
  else refresh();
})();
