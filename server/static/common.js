// Shared helpers: requests with the CSRF token, speech, and the table overlay (SVG over the image).
"use strict";
const Z = (() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const SVG = "http://www.w3.org/2000/svg";

  async function get(url) {
    const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    let data = {};
    try { data = await r.json(); } catch (e) { data = { error: "the server sent something unexpected" }; }
    return { ok: r.ok, status: r.status, data };
  }

  async function post(url, payload) {
    const r = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, Accept: "application/json" },
      body: JSON.stringify(payload || {}),
    });
    let data = {};
    try { data = await r.json(); } catch (e) { data = { error: "the server sent something unexpected" }; }
    return { ok: r.ok, status: r.status, data };
  }

  // Build DOM without innerHTML: every text from the server goes in as text.
  function el(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") n.className = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      n.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return n;
  }

  function svg(tag, attrs, text) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function speak(text) {
    if (!("speechSynthesis" in window) || !text) return;
    try {
      window.speechSynthesis.cancel();
      window.speechSynthesis.speak(new SpeechSynthesisUtterance(text));
    } catch (e) { /* speech is a nicety */ }
  }

  function recognizer() {
    const R = window.SpeechRecognition || window.webkitSpeechRecognition;
    if (!R) return null;
    const r = new R();
    r.lang = "en-US"; r.interimResults = false; r.maxAlternatives = 1;
    return r;
  }

  const pts = (poly) => poly.map((p) => p.join(",")).join(" ");

  // ov: {size:[w,h], pieces:[{id, polygon, center, koan}], stones, koans:[{id, outline, mark, proposed?, judgment_call?, problems?}]}
  function drawOverlay(root, ov, opts) {
    opts = opts || {};
    const sel = opts.selected || [];
    root.setAttribute("viewBox", `0 0 ${ov.size[0]} ${ov.size[1]}`);
    root.replaceChildren();
    // sizes in screen pixels, whatever the picture's scale on this screen
    const sc = ov.size[0] / Math.max(1, root.getBoundingClientRect().width);
    const fs = (px) => `${(px * sc).toFixed(1)}px`;
    for (const ko of ov.koans || []) {
      const cls = ["koan", ko.mark ? ko.mark : "unmarked"];
      if (ko.problems && ko.problems.length) cls.push("problem");
      root.append(svg("polygon", { class: cls.join(" "), points: pts(ko.outline), "stroke-width": 2.5 * sc }));
    }
    for (const s of ov.stones || []) root.append(svg("circle", { class: "stone-ring", cx: s.center[0], cy: s.center[1], r: s.r + 2 * sc, "stroke-width": 1.5 * sc }));
    for (const p of ov.pieces || []) {
      let cls = "piece";
      if (sel[0] === p.id) cls += " sel-a";
      else if (sel[1] === p.id) cls += " sel-b";
      root.append(svg("polygon", { class: cls, points: pts(p.polygon), "data-id": p.id, "stroke-width": 3 * sc }));
    }
    const labels = [], pieceBoxes = (ov.pieces || []).map((p) => bounds(p.polygon));
    for (const [i, p] of (ov.pieces || []).entries()) {
      const g = svg("g", { class: "label", "data-label": p.id });
      g.append(svg("text", { class: "plabel", x: 0, y: 0, "text-anchor": "middle", "font-size": fs(11), "stroke-width": 3 * sc }, p.id));
      labels.push({ g, box: pieceBoxes[i], kind: "piece" });
    }
    for (const ko of ov.koans || []) {
      const g = svg("g", { class: "label", "data-label": ko.id });
      g.append(svg("text", { class: "klabel", x: 0, y: 0, "font-size": fs(13), "stroke-width": 3 * sc }, ko.id + (ko.mark ? ` ${ko.mark}` : " unmarked")));
      if (opts.master && ko.proposed) {
        const t = `rule: ${ko.proposed}` + (ko.judgment_call ? " (judgment call)" : "") + (ko.problems && ko.problems.length ? " MISMARKED?" : "");
        g.append(svg("text", { class: "mlabel" + (ko.problems && ko.problems.length ? " bad" : ""), x: 0, y: 17 * sc, "font-size": fs(12), "stroke-width": 3 * sc }, t));
      }
      labels.push({ g, box: bounds(ko.outline), kind: "koan" });
    }
    placeLabels(root, labels, pieceBoxes, sc, ov.size);
  }

  const bounds = (poly) => ({
    x0: Math.min(...poly.map((q) => q[0])), y0: Math.min(...poly.map((q) => q[1])),
    x1: Math.max(...poly.map((q) => q[0])), y1: Math.max(...poly.map((q) => q[1])),
  });
  const overlap = (a, b) => Math.max(0, Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0)) * Math.max(0, Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0));

  // Each label (a piece's letter, a koan's name and mark) tries a few spots around what it names
  // and takes the first that covers no label placed before it and no piece, else the one that
  // covers least (labels weigh ten times pieces): on a crowded table the default spot of one koan's
  // name lies on the next koan's, and a piece's letter on its neighbour's.
  function placeLabels(root, labels, pieceBoxes, sc, size) {
    const placed = [];
    const gap = 3 * sc;
    for (const L of labels) {
      root.append(L.g);
      const own = L.g.getBBox();  // the label drawn at (0, 0): its size, and where its baseline sits
      const w = own.width, h = own.height, b = L.box;
      const cx = (b.x0 + b.x1) / 2 - w / 2, cy = (b.y0 + b.y1) / 2, left = b.x0 - gap - w, right = b.x1 + gap;
      const starts = L.kind === "piece"  // where the label's box starts (its own x of 0 sits at own.x)
        ? [[cx, b.y0 - gap - h], [cx, b.y1 + gap], [right, cy - h / 2], [left, cy - h / 2]]
        : [[b.x0, b.y1 + gap], [b.x0, b.y0 - gap - h], [b.x1 - w, b.y1 + gap], [b.x1 - w, b.y0 - gap - h],
          [right, cy - h / 2], [left, cy - h / 2], [b.x0, b.y1 + gap + h], [b.x0, b.y0 - gap - 2 * h]];
      let best = null;
      for (const [sx, sy] of starts) {
        const x = Math.min(Math.max(sx, 0), size[0] - w), y = Math.min(Math.max(sy, 0), size[1] - h);
        const box = { x0: x, y0: y, x1: x + w, y1: y + h };
        const cost = 10 * placed.reduce((a, q) => a + overlap(box, q), 0)
          + pieceBoxes.reduce((a, q) => a + (q === b ? 0 : overlap(box, q)), 0);
        if (!best || cost < best.cost) best = { cost, box, dx: x - own.x, dy: y - own.y };
        if (cost === 0) break;
      }
      L.g.setAttribute("transform", `translate(${best.dx.toFixed(1)},${best.dy.toFixed(1)})`);
      placed.push(best.box);
    }
  }

  function inside(poly, x, y) {
    let c = false;
    for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
      const [xi, yi] = poly[i], [xj, yj] = poly[j];
      if ((yi > y) !== (yj > y) && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) c = !c;
    }
    return c;
  }

  // The piece under a tap: inside its outline, else the nearest centre within reach (fingers are wide).
  function hit(root, ov, evt) {
    const pt = root.createSVGPoint();
    pt.x = evt.clientX; pt.y = evt.clientY;
    const m = root.getScreenCTM();
    if (!m) return null;
    const p = pt.matrixTransform(m.inverse());
    const scale = ov.size[0] / root.getBoundingClientRect().width;
    let best = null, bestD = 28 * scale;
    for (const q of ov.pieces || []) {
      if (inside(q.polygon, p.x, p.y)) return q.id;
      const d = Math.hypot(q.center[0] - p.x, q.center[1] - p.y);
      if (d < bestD) { best = q.id; bestD = d; }
    }
    return best;
  }

  function markDot(mark) { return el("span", { class: "mark " + (mark || "none"), title: mark || "unmarked" }); }

  // "Zoom in" makes the picture bigger than the screen and scrollable (small pieces on phones).
  function zoom(button, view, redraw) {
    if (!button) return;
    button.addEventListener("click", () => {
      const on = view.classList.toggle("zoomed");
      button.textContent = on ? "Zoom out" : "Zoom in";
      redraw();
    });
    window.addEventListener("resize", redraw);
  }

  return { zoom, get, post, el, svg, speak, recognizer, drawOverlay, hit, markDot };
})();
