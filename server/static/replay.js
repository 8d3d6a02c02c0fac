// Replay of a recorded game: a slider over its events, the koans after each one.
"use strict";
(async () => {
  const $ = (id) => document.getElementById(id);
  const root = $("replay");
  const base = root.dataset.base.replace(/\/$/, "");
  const r = await Z.get(root.dataset.events);
  if (!r.ok) { $("step-text").textContent = r.data.error; return; }
  const steps = r.data.steps;
  const slider = $("step");
  slider.max = Math.max(1, steps.length);
  $("timeline").replaceChildren(...steps.map((s, i) => Z.el("li", { onclick: () => show(i + 1) }, s.text)));
  function show(n) {
    n = Math.min(Math.max(1, n), steps.length);
    slider.value = n;
    const s = steps[n - 1];
    if (!s) return;
    $("step-no").textContent = `${n} / ${steps.length}`;
    $("step-text").textContent = s.text;
    $("step-koans").replaceChildren(...s.koans.map((k) => Z.el("figure", {},
      Z.el("img", { src: `${base}/koan/${s.at}/${encodeURIComponent(k.id)}.png`, alt: `koan ${k.id}` }),
      Z.el("figcaption", {}, Z.markDot(k.mark), ` ${k.id} ${k.mark || "unmarked"}`))));
    const snap = $("step-snapshot");
    if (s.snapshot) { snap.src = `${base}/image/${s.snapshot}`; snap.hidden = false; } else snap.hidden = true;
    [...$("timeline").children].forEach((li, i) => li.classList.toggle("current", i === n - 1));
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  $("prev").addEventListener("click", () => show(Number(slider.value) - 1));
  $("next").addEventListener("click", () => show(Number(slider.value) + 1));
  show(steps.length);
})();
