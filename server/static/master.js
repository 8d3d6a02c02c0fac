// The Master's dashboard: rule, audit (marks / stones read / the rule's marks / judgment calls),
// requests, Mondo, guesses with counterexamples, katsu, the demo table.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const img = $("table-img"), svgRoot = $("overlay");
  let state = null, tableV = null, imageV = null, version = null, busy = false;
  const suggestions = {};
  // Proving that no counterexample exists means searching every koan up to the size limit: seconds,
  // so the button says it is at work and does not take a second click meanwhile.
  const searching = new Set();

  async function act(url, payload) {
    const r = await Z.post(url, payload || {});
    if (!r.ok) flash(r.data.error || "that did not work");
    await poll(true);
    return r;
  }
  function flash(text) {
    const a = $("alerts");
    const n = Z.el("div", { class: "card alert", role: "alert" }, text, " ", Z.el("button", { class: "link", onclick: () => n.remove() }, "dismiss"));
    a.prepend(n);
    setTimeout(() => n.remove(), 8000);
  }

  $("rule-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    await setRule($("rule-text").value);
  });
  async function setRule(text) {
    const r = await Z.post("/master/api/rule", { text });
    const box = $("rule-problem");
    box.replaceChildren();
    if (r.ok) { $("rule-canonical").textContent = `Read as: ${r.data.canonical}`; }
    else if (r.data.problem && r.data.problem.kind === "ambiguous") {
      box.append(Z.el("p", {}, "That rule can be read more than one way. Pick one:"));
      for (const reading of r.data.problem.readings) box.append(Z.el("button", { onclick: () => { $("rule-text").value = reading; setRule(reading); } }, reading));
    } else if (r.data.problem && r.data.problem.kind === "syntax") {
      box.append(Z.el("p", { class: "error" }, r.data.error));
      if (r.data.problem.column) box.append(Z.el("div", { class: "caret" }, text + "\n" + " ".repeat(Math.max(0, r.data.problem.column - 1)) + "^"));
    } else box.append(Z.el("p", { class: "error" }, r.data.error));
    poll(true);
  }
  $("start-btn").addEventListener("click", () => act("/master/api/start"));
  $("mark-all-btn").addEventListener("click", () => act("/master/api/mark-all"));
  $("auto-mark").addEventListener("change", (e) => act("/master/api/auto-mark", { on: e.target.checked }));
  $("reveal-btn").addEventListener("click", () => act("/master/api/mondo/reveal"));
  $("end-turn").addEventListener("click", () => act("/master/api/end-turn"));
  $("give-up").addEventListener("click", () => { if (confirm("Tell the students the rule and end the game?")) act("/master/api/give-up"); });
  if ($("demo-build")) $("demo-build").addEventListener("click", () => act("/master/api/demo/build", { koan: $("demo-choice").value }));

  const openFolds = new Set();  // koans whose folded close calls the Master opened (kept across redraws)

  function auditRow(a) {
    const btn = (label, fn, cls) => Z.el("button", { onclick: fn, class: cls || null }, label);
    const actions = [];
    if (!a.mark) {
      actions.push(btn(`Mark ${a.proposed || ""}`.trim(), () => act("/master/api/mark", { koan: a.koan }), "primary"));
      if (state.phase === "playing" && !(state.mondo && state.mondo.open)) actions.push(btn("Mondo", () => act("/master/api/mondo/start", { koan: a.koan })));
    } else if (a.proposed && a.mark !== a.proposed) {
      actions.push(btn(`Correct to ${a.proposed}`, () => act("/master/api/mark", { koan: a.koan, color: a.proposed }), "primary"));
    }
    if (state.editable) {
      actions.push(Z.el("span", { class: "demo-acts" }, "demo: ",
        btn("knock over", () => act("/master/api/demo/disturb", { koan: a.koan }), "mini"),
        btn("break down", () => act("/master/api/demo/remove", { koan: a.koan }), "mini"),
        btn("white stone", () => act("/master/api/demo/stone", { koan: a.koan, color: "white" }), "mini"),
        btn("black stone", () => act("/master/api/demo/stone", { koan: a.koan, color: "black" }), "mini")));
    }
    const judgment = [];
    if (a.judgment_call) judgment.push(Z.el("div", { class: "flag" }, "JUDGMENT CALL"));
    const closeCall = (b) => {
      const name = `${b.predicate}(${b.pieces.join(", ")})`;
      const val = b.is_ruled ? b.ruled : b.value;
      return Z.el("div", { class: "small" }, `${name} = ${val} (${b.margin} ${b.unit} from the line)${b.is_ruled ? " · ruled" : ""} `,
        btn(`rule ${b.alternative}`, () => act("/master/api/ruling", { koan: a.koan, key: b.key, value: b.alternative })),
        b.is_ruled ? null : btn(`rule ${b.value}`, () => act("/master/api/ruling", { koan: a.koan, key: b.key, value: b.value })));
    };
    // close calls that could change the mark (or that were ruled) in full; the rest folded away
    const folded = a.borderline.filter((b) => !b.changes_mark && !b.is_ruled);
    for (const b of a.borderline) if (b.changes_mark || b.is_ruled) judgment.push(closeCall(b));
    if (folded.length) {
      const n = folded.length;
      const what = a.proposed ? `that ${n > 1 ? "do" : "does"} not change the mark` : "";
      judgment.push(Z.el("details", { class: "small close-calls", open: openFolds.has(a.koan),
        ontoggle: (e) => (e.target.open ? openFolds.add(a.koan) : openFolds.delete(a.koan)) },
        Z.el("summary", {}, `${n} close call${n > 1 ? "s" : ""} ${what}`.trim()),
        folded.map(closeCall)));
    }
    for (const d of a.doubts || []) {
      judgment.push(Z.el("div", { class: "small" }, `camera: ${d.text} `,
        btn("I have looked: settled", () => act("/master/api/doubt", { koan: a.koan, key: d.key }))));
    }
    const problems = a.problems.map((p) => Z.el("div", { class: "problem-text" }, p));
    return Z.el("tr", { class: a.problems.length ? "problem" : null },
      Z.el("td", {}, a.koan),
      Z.el("td", {}, Z.markDot(a.mark), " ", a.mark || "unmarked"),
      Z.el("td", {}, a.stones.join(", ") || "—"),
      Z.el("td", {}, a.proposed ? [Z.markDot(a.proposed), " ", a.proposed] : "— (no rule yet)", problems),
      Z.el("td", {}, judgment.length ? judgment : (a.judged ? Z.el("div", { class: "flag" }, "marked on a judgment call") : "—"),
        a.witnesses.length ? Z.el("div", { class: "small" }, "witnesses: " + a.witnesses.slice(0, 4).join(", ")) : null),
      Z.el("td", {}, Z.el("div", { class: "buttons" }, actions)));
  }

  function guessBox(g) {
    const parts = [Z.el("p", {}, Z.el("b", {}, g.player), `: “${g.text}” — ${g.status}`, g.reading && g.reading !== g.text ? ` (read as “${g.reading}”)` : "")];
    if (g.status === "official") {
      parts.push(Z.el("div", { class: "buttons" },
        Z.el("button", { class: "primary", disabled: searching.has(g.id), onclick: () => suggest(g.id) },
          searching.has(g.id) ? "Searching for a counterexample…" : "Find a counterexample"),
        Z.el("button", { onclick: () => { if (confirm(`Declare ${g.player}'s guess unbeatable: they win?`)) act(`/master/api/guess/${g.id}/won`); } }, "Cannot disprove: they win")));
      const s = suggestions[g.id] || (state.suggestions || {})[g.id];
      if (s) parts.push(suggestionBox(g, s));
      const candidates = state.koans.filter((k) => k.mark && !k.counterexample_for);
      const sel = Z.el("select", {}, candidates.slice().reverse().map((k) => Z.el("option", { value: k.id }, `${k.id} (${k.mark})`)));
      parts.push(Z.el("div", { class: "row" }, "Disproved by koan ", sel, Z.el("button", { onclick: () => act(`/master/api/guess/${g.id}/disprove`, { koan: sel.value }) }, "Record")));
    }
    return Z.el("div", { class: "card" }, parts);
  }

  function suggestionBox(g, s) {
    if (!s.found) return Z.el("div", {}, Z.el("p", { class: "warn" }, "No counterexample found. Searched: " + s.searched));
    const pic = s.svg ? Z.el("img", { src: "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(s.svg))), alt: "the counterexample", class: "snapshot" })
      : Z.el("img", { src: `/master/api/guess/${g.id}/suggestion.png`, alt: "the counterexample", class: "snapshot" });
    return Z.el("div", {},
      Z.el("p", {}, s.on_table ? `Koan ${s.on_table} on the table already disproves it: ` : "Build this koan: ",
        `your rule marks it ${s.rule_mark}, the guess marks it ${s.guess_mark}.`),
      pic,
      Z.el("ol", { class: "small" }, (s.instructions || []).map((i) => Z.el("li", {}, i))),
      s.on_table ? Z.el("button", { onclick: () => act(`/master/api/guess/${g.id}/disprove`, { koan: s.on_table }) }, `Point out koan ${s.on_table}`)
        : (state.editable ? Z.el("button", { onclick: () => act(`/master/api/guess/${g.id}/place`) }, "Build it on the demo table") : null));
  }

  async function suggest(id) {
    searching.add(id);
    render(state);
    try {
      const r = await Z.post(`/master/api/guess/${id}/suggest`, {});
      if (r.ok) suggestions[id] = r.data; else flash(r.data.error);
    } finally {
      searching.delete(id);
      render(state);
    }
  }

  function render(s) {
    const phase = s.phase === "setup" ? "Setting up: set the rule, mark the initial koans, start." :
      s.phase === "finished" ? (s.winner ? `${s.winner} won.` : "The game is over.") : `${s.turn || "nobody"}'s turn`;
    $("status").textContent = phase;
    if (s.rule_canonical) $("rule-canonical").textContent = `Rule: ${s.rule_text} — read as: ${s.rule_canonical}`;
    $("rule-form").hidden = s.phase !== "setup";
    $("start-btn").hidden = s.phase !== "setup";
    $("mark-all-btn").hidden = !(s.phase === "setup" && s.rule_text && s.audit.some((a) => !a.mark));
    $("auto-mark").checked = !!s.auto_mark;
    const fs = $("feed-status");
    fs.hidden = !s.feed.status; fs.textContent = s.feed.status || "";
    const cd = $("camera-doubts"), loose = s.camera_doubts || [];
    cd.hidden = !loose.length;
    cd.replaceChildren(...loose.map((d) => Z.el("li", {}, `camera: ${d.text} (no koan there that it could read)`)));
    if (s.hands_in_view) {  // what a hand hides is held as it was: a change under it shows once it has gone
      const over = s.hands_over || [];
      cd.hidden = false;
      cd.append(Z.el("li", {}, over.length
        ? `camera: a hand is over koan${over.length > 1 ? "s" : ""} ${over.join(", ")}; ${over.length > 1 ? "their" : "its"} pieces are held as they were until it goes`
        : "camera: a hand is over the table; the pieces it hides are held as they were until it goes"));
    }
    $("audit").querySelector("tbody").replaceChildren(...s.audit.map(auditRow));
    // requests
    $("requests-card").hidden = !s.requests.length;
    $("requests").replaceChildren(...s.requests.map((r) => Z.el("li", {}, `${r.player || "A student"} says Master for ${r.koan} `,
      Z.el("button", { class: "primary", onclick: () => act("/master/api/mark", { koan: r.koan }) }, "Mark it"))));
    // mondo
    const m = s.mondo;
    $("mondo-card").hidden = !(m && m.open);
    if (m && m.open) {
      const votes = Object.entries(s.mondo_votes).map(([p, v]) => `${p}: ${v}`).join(", ") || "no votes yet";
      const row = s.audit.find((a) => a.koan === m.koan);
      $("mondo-text").textContent = `Koan ${m.koan}. Votes (hidden from students): ${votes}. ` + (s.mondo_ready ? "Everyone has voted." : "Still voting.") +
        (row && row.proposed ? ` The rule says ${row.proposed}.` : "");
    }
    // katsu
    // a change no hand came near is the Master's alone: the camera may have read the koan anew
    const alerts = s.katsu_detail.filter((k) => k.open).map((k) => Z.el("div", { class: "card alert" },
      Z.el("h2", {}, k.public ? `Katsu! Koan ${k.koan} was disturbed` : `Koan ${k.koan} reads differently now`),
      k.public ? null : Z.el("p", { class: "hint" }, "No hand came near it, so the students were not told: the camera may have misread it. Look at the table; if it was disturbed, call katsu."),
      Z.el("div", { class: "pics" },
        Z.el("figure", {}, Z.el("img", { src: `/master/api/katsu/${k.id}/before.png?v=${s.version}`, alt: "before" }), Z.el("figcaption", {}, "before")),
        Z.el("figure", {}, Z.el("img", { src: `/master/api/katsu/${k.id}/after.png?v=${s.version}`, alt: "after" }), Z.el("figcaption", {}, "now"))),
      Z.el("div", { class: "buttons" },
        k.public ? null : Z.el("button", { onclick: () => act(`/master/api/katsu/${k.id}/call`) }, "Call katsu"),
        s.editable ? Z.el("button", { class: "primary", onclick: () => act(`/master/api/katsu/${k.id}/restore`) }, "Restore it") : Z.el("span", { class: "hint" }, "Restore the koan as it was; the alert clears when the table matches."),
        Z.el("button", { onclick: () => act(`/master/api/katsu/${k.id}/accept`) }, "Take it as it stands"))));
    const keep = [...$("alerts").querySelectorAll('[role="alert"]')];
    $("alerts").replaceChildren(...keep, ...alerts);
    // guesses
    const gs = s.guesses.filter((g) => ["official", "ready", "contradicted", "unclear"].includes(g.status));
    const done = s.guesses.filter((g) => ["disproved", "won"].includes(g.status)).slice(-4);
    $("guesses").replaceChildren(...gs.map(guessBox), ...done.map((g) => Z.el("p", { class: "small" }, `${g.player}: “${g.text}” — ${g.status}${g.counterexample ? " by " + g.counterexample : ""}`)));
    if (!gs.length && !done.length) $("guesses").replaceChildren(Z.el("p", { class: "hint" }, "No guesses yet."));
    $("players").replaceChildren(...s.players.map((p) => Z.el("li", {}, p.name, p.name === s.turn ? " (turn)" : "", ` · ${p.stones} stone(s)`)));
  }

  let ov = null;
  async function refreshTable() {
    const r = await Z.get("/master/api/overlay");
    if (r.ok) { ov = r.data; Z.drawOverlay(svgRoot, ov, { master: true }); }
  }
  Z.zoom($("zoom"), $("table-view"), () => { if (ov) Z.drawOverlay(svgRoot, ov, { master: true }); });

  async function poll(force) {
    if (busy && !force) return;
    busy = true;
    try {
      const r = await Z.get("/master/api/state");
      if (!r.ok) return;
      const s = r.data;
      if (s.image_version !== imageV) { imageV = s.image_version; img.src = `/master/api/image.jpg?v=${imageV}`; }
      if (s.table_version !== tableV || s.version !== version) { tableV = s.table_version; await refreshTable(); }
      const changed = s.version !== version;
      version = s.version;
      state = s;
      if (changed || force) render(s);
    } finally { busy = false; }
  }
  poll();
  setInterval(poll, 1000);
})();
