// The students' view: tap pieces and ask, build (demo), call Master or Mondo, vote, guess.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const img = $("table-img"), svgRoot = $("overlay");
  let state = null, overlay = null, tableV = null, imageV = null, selected = [];
  let lastReveal = null, catalogueLoaded = false, lastGuess = null, busy = false;

  function say(text) { $("answer").textContent = text; Z.speak(text); }

  function redraw() { if (overlay) Z.drawOverlay(svgRoot, overlay, { selected }); $("sel").textContent = selected.length ? selected.join(" and ") : "none"; }

  svgRoot.addEventListener("click", (e) => {
    if (!overlay) return;
    const id = Z.hit(svgRoot, overlay, e);
    if (!id) return;
    const i = selected.indexOf(id);
    if (i >= 0) selected.splice(i, 1); else { selected.push(id); if (selected.length > 2) selected.shift(); }
    redraw();
  });
  Z.zoom($("zoom"), $("table-view"), () => redraw());
  $("clear-sel").addEventListener("click", () => { selected = []; redraw(); });

  async function ask(payload) {
    const r = await Z.post("/api/ask", payload);
    say(r.ok ? r.data.answer : r.data.error);
  }

  for (const b of document.querySelectorAll("#ask-buttons button")) {
    b.addEventListener("click", () => {
      const n = Number(b.dataset.pieces);
      if (selected.length < n) { say(n === 2 ? "Tap two pieces first." : "Tap a piece first."); return; }
      ask({ kind: b.dataset.kind, a: selected[0], b: n === 2 ? selected[1] : null });
    });
  }
  $("ask-text").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("question").value.trim();
    if (text) ask({ text, selected });
  });
  const rec = Z.recognizer();
  if (rec) {
    const mic = $("mic");
    mic.hidden = false;
    mic.addEventListener("click", () => { try { rec.start(); mic.textContent = "Listening…"; } catch (e) { /* already listening */ } });
    rec.onresult = (ev) => { const t = ev.results[0][0].transcript; $("question").value = t; ask({ text: t, selected }); };
    rec.onend = () => { mic.textContent = "Speak"; };
    rec.onerror = () => { mic.textContent = "Speak"; say("I did not catch that: type the question instead."); };
  }

  async function refreshTable() {
    const r = await Z.get("/api/overlay");
    if (r.ok) { overlay = r.data; redraw(); }
  }

  function statusLine(s) {
    if (s.phase === "setup") return "The Master is setting up the table.";
    if (s.phase === "finished") return s.winner ? `${s.winner} has won!` : "The game is over.";
    if (s.mondo && s.mondo.open) return `Mondo on koan ${s.mondo.koan}!`;
    return s.turn ? `${s.turn}'s turn` : "Waiting for students to join.";
  }

  function render(s) {
    $("status").textContent = statusLine(s);
    const me = s.me;
    if (me && $("me-stones")) $("me-stones").textContent = me.stones;
    // banner: winner / katsu
    const banner = $("banner");
    if (s.phase === "finished" && s.rule) {
      banner.hidden = false; banner.className = "banner won";
      banner.textContent = (s.winner ? `${s.winner} has achieved enlightenment! ` : "The students gave up. ") + `The rule: ${s.rule.text}`;
    } else if (s.katsu && s.katsu.length) {
      banner.hidden = false; banner.className = "banner";
      banner.textContent = `Katsu! Koan ${s.katsu.map((k) => k.koan).join(", ")} was disturbed: the Master will restore it.`;
    } else banner.hidden = true;
    // koans
    $("koans").replaceChildren(...s.koans.map((k) => Z.el("li", {}, Z.markDot(k.mark), ` ${k.id} `,
      k.mark ? `marked ${k.mark}` : "unmarked", k.built_by ? ` · built by ${k.built_by}` : "",
      k.counterexample_for ? ` · counterexample to guess ${k.counterexample_for}` : "",
      ` · pieces ${k.pieces.join(", ")}`)));
    $("players").replaceChildren(...s.players.map((p) => Z.el("li", {}, p.name, p.name === s.turn ? " (turn)" : "", ` · ${p.stones} guessing stone${p.stones === 1 ? "" : "s"}`)));
    $("guesses").replaceChildren(...s.guesses.slice().reverse().map((g) => Z.el("li", {}, `${g.player}: “${g.text}” — ${g.status}`,
      g.counterexample ? ` (koan ${g.counterexample})` : "")));
    $("answers").replaceChildren(...s.answers.slice().reverse().map((a) => Z.el("li", {}, (a.player ? a.player + ": " : "") + a.answer)));
    // Mondo
    const mc = $("mondo-card");
    if (mc) {
      const m = s.mondo;
      if (m && m.open) {
        mc.hidden = false;
        const waiting = s.players.map((p) => p.name).filter((n) => !m.voted.includes(n));
        $("mondo-text").textContent = `Does koan ${m.koan} have the Buddha-nature? ` +
          (me && me.voted ? `You voted ${me.voted} (hidden from the others). ` : "Vote: the others will not see it. ") +
          (waiting.length ? `Waiting for: ${waiting.join(", ")}.` : "Everyone has voted: the Master will reveal.");
        $("vote-box").hidden = !me;
      } else if (m && !m.open) {
        mc.hidden = false; $("vote-box").hidden = true;
        const votes = Object.entries(m.votes || {}).map(([p, v]) => `${p}: ${v}`).join(", ");
        $("mondo-text").textContent = `Koan ${m.koan} is ${m.mark}. Votes: ${votes || "none"}. Guessing stone to: ${m.awarded.join(", ") || "nobody"}.`;
        const key = `${m.koan}-${m.mark}`;
        if (lastReveal !== null && lastReveal !== key) Z.speak($("mondo-text").textContent);
        lastReveal = key;
      } else mc.hidden = true;
      if (!m || !m.open) { if (lastReveal === null) lastReveal = m ? `${m.koan}-${m.mark}` : ""; }
    }
    // turn
    const tc = $("turn-card");
    if (tc) {
      const mine = me && me.my_turn && s.phase === "playing";
      tc.hidden = !mine;
      if (mine) {
        $("build-box").hidden = !me.can_build;
        if (me.can_build && !catalogueLoaded) loadCatalogue();
        const open = s.koans.filter((k) => !k.mark && k.built_by === me.name && !(s.mondo && s.mondo.open && s.mondo.koan === k.id));
        const waiting = new Set(s.requests.map((r) => r.koan));
        $("call-box").replaceChildren(...open.map((k) => Z.el("div", { class: "buttons" }, `Koan ${k.id}: `,
          waiting.has(k.id) ? "waiting for the Master's mark" : [
            Z.el("button", { class: "primary", onclick: () => call(k.id, "master") }, "Master!"),
            Z.el("button", { onclick: () => call(k.id, "mondo") }, "Mondo!")])));
      }
    }
    // guessing
    const gh = $("guess-hint");
    if (gh && me) {
      const can = me.stones > 0 && s.phase === "playing";
      gh.textContent = can ? `You have ${me.stones} guessing stone${me.stones === 1 ? "" : "s"}. A guess is official only when you make it so.` :
        "Win a guessing stone in a Mondo to guess.";
      $("guess-form").hidden = !can;
    }
  }

  async function loadCatalogue() {
    const r = await Z.get("/api/catalogue");
    if (!r.ok) return;
    catalogueLoaded = true;
    $("build-choice").replaceChildren(...r.data.koans.map((k) => Z.el("option", { value: k.name }, k.description)),
      Z.el("option", { value: "random" }, "a random koan"));
  }

  async function call(koan, what) {
    const r = await Z.post("/api/call", { koan, call: what });
    if (!r.ok) say(r.data.error);
    poll();
  }

  if ($("build-btn")) $("build-btn").addEventListener("click", async () => {
    const r = await Z.post("/api/build", { koan: $("build-choice").value });
    say(r.ok ? `You built koan ${r.data.koan}. Now say Master or Mondo.` : r.data.error);
    poll();
  });
  if ($("end-turn")) $("end-turn").addEventListener("click", async () => {
    const r = await Z.post("/api/end-turn", {});
    if (!r.ok) say(r.data.error);
    poll();
  });
  for (const b of document.querySelectorAll("#vote-box button")) b.addEventListener("click", async () => {
    const r = await Z.post("/api/vote", { vote: b.dataset.vote });
    if (!r.ok) say(r.data.error);
    poll();
  });

  function showGuess(res) {
    const box = $("guess-result");
    const d = res.data;
    if (!res.ok) { box.replaceChildren(Z.el("p", { class: "error" }, d.error)); return; }
    lastGuess = d;
    const parts = [];
    if (d.status === "unclear" && d.problem) {
      const p = d.problem;
      if (p.kind === "ambiguous") {
        parts.push(Z.el("p", {}, "That can be read more than one way. Which do you mean?"));
        for (const reading of p.readings) parts.push(Z.el("button", { onclick: () => sendGuess(reading) }, reading));
      } else if (p.kind === "illegal") {
        parts.push(Z.el("p", { class: "error" }, `That is not a legal rule: ${p.restriction}`));
      } else {
        parts.push(Z.el("p", { class: "error" }, `I could not read that: ${p.message}`));
        if (p.column) parts.push(Z.el("div", { class: "caret" }, $("guess-text").value + "\n" + " ".repeat(Math.max(0, p.column - 1)) + "^"));
      }
    } else if (d.status === "contradicted") {
      parts.push(Z.el("p", { class: "error" }, "A koan on the table contradicts that guess:"));
      parts.push(Z.el("ul", {}, d.contradicted_by.map((c) => Z.el("li", {}, `koan ${c.koan} is marked ${c.mark}, your guess says ${c.guess_says}`))));
      parts.push(Z.el("p", { class: "hint" }, "Change your guess, or keep your stone."));
    } else if (d.status === "ready") {
      parts.push(Z.el("p", {}, `Your guess, as I read it: “${d.reading}”. No koan on the table contradicts it.`));
      parts.push(Z.el("div", { class: "buttons" },
        Z.el("button", { class: "primary", onclick: () => official(d.guess) }, "Make it official (spend a stone)"),
        Z.el("button", { onclick: () => withdraw(d.guess) }, "Withdraw")));
    }
    box.replaceChildren(...parts);
  }

  async function sendGuess(reading) {
    const text = $("guess-text").value.trim();
    if (!text) return;
    showGuess(await Z.post("/api/guess", { text, reading: reading || null }));
    poll();
  }
  if ($("guess-form")) $("guess-form").addEventListener("submit", (e) => { e.preventDefault(); sendGuess(null); });

  async function official(id) {
    const r = await Z.post(`/api/guess/${id}/official`, {});
    $("guess-result").replaceChildren(Z.el("p", { class: r.ok ? "" : "error" }, r.ok ? "Your guess is official. The Master will answer it." : r.data.error));
    if (r.ok) Z.speak("Your guess is official.");
    poll();
  }
  async function withdraw(id) {
    await Z.post(`/api/guess/${id}/withdraw`, {});
    $("guess-result").replaceChildren(Z.el("p", {}, "Withdrawn: you keep your stone."));
    poll();
  }

  async function poll() {
    if (busy) return;
    busy = true;
    try {
      const r = await Z.get("/api/state");
      if (!r.ok) return;
      const s = r.data;
      if (s.image_version !== imageV) { imageV = s.image_version; img.src = `/api/image.jpg?v=${imageV}`; }
      if (s.table_version !== tableV || !state || s.version !== state.version) { tableV = s.table_version; await refreshTable(); }
      state = s;
      render(s);
    } finally { busy = false; }
  }
  poll();
  setInterval(poll, 1200);
})();
