// Draws each agent's reported-against-measured chart from the JSON the page embeds (json_script).
// The same numbers are in the table under each chart, for screen readers and no-JS.
(function () {
  "use strict";

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function draw(canvas) {
    if (typeof window.Chart === "undefined") return;
    const source = document.getElementById(canvas.dataset.scoreChart);
    if (!source) return;
    const data = JSON.parse(source.textContent);
    const text = cssVar("--gr-chart-text", "#475569");
    const grid = cssVar("--gr-chart-grid", "rgba(100, 116, 139, 0.18)");
    const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    new window.Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: [
          { label: "Reported", data: data.reported, borderColor: cssVar("--gr-warn", "#d97706"),
            backgroundColor: cssVar("--gr-warn", "#d97706"), tension: 0.3, pointRadius: 3, borderWidth: 2 },
          { label: "Measured", data: data.measured, borderColor: cssVar("--gr-accent", "#4f46e5"),
            backgroundColor: cssVar("--gr-accent", "#4f46e5"), tension: 0.3, pointRadius: 3, borderWidth: 2 },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reduced ? false : { duration: 300 },
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom", labels: { color: text, usePointStyle: true, boxWidth: 8 } } },
        scales: {
          x: { ticks: { color: text, maxRotation: 0, autoSkip: true }, grid: { display: false } },
          y: { min: 0, max: 1, ticks: { color: text }, grid: { color: grid } },
        },
      },
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("canvas[data-score-chart]").forEach(draw);
  });
})();
