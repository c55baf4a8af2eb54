// Draws the overview's two charts, runs by final action and violating evaluations by action, as
// stacked bars from the JSON in each canvas's data-series ({labels, series: [{action, label, data}]});
// redrawn after an htmx swap of the period. The same numbers are in the table under each chart, for
// screen readers and pages read without JavaScript.
(function () {
  "use strict";
  const charts = new WeakMap();
  const COLOURS = {
    allow: ["--gr-allow", "#15803d"],
    warn: ["--gr-warn", "#d97706"],
    block: ["--gr-block", "#dc2626"],
  };

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function draw(canvas) {
    if (typeof window.Chart === "undefined") return;
    if (!canvas.dataset.series) return;
    const data = JSON.parse(canvas.dataset.series);
    const previous = charts.get(canvas);
    if (previous) previous.destroy();
    const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    const text = cssVar("--gr-chart-text", "#475569");
    const grid = cssVar("--gr-chart-grid", "rgba(100, 116, 139, 0.18)");
    const chart = new window.Chart(canvas, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: data.series.map((s) => ({
          label: s.label,
          data: s.data,
          backgroundColor: cssVar(...(COLOURS[s.action] || ["--gr-accent", "#4f46e5"])),
          stack: "total",
          borderRadius: 2,
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reduced ? false : { duration: 300 },
        interaction: { mode: "index", intersect: false },
        plugins: { legend: { position: "bottom", labels: { color: text, usePointStyle: true, boxWidth: 8 } } },
        scales: {
          x: { stacked: true, ticks: { color: text, maxRotation: 0, autoSkip: true, maxTicksLimit: 12 },
               grid: { display: false } },
          y: { stacked: true, beginAtZero: true, ticks: { color: text, precision: 0 }, grid: { color: grid } },
        },
      },
    });
    charts.set(canvas, chart);
  }

  function drawAll(root) {
    (root || document).querySelectorAll("canvas[data-series]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", () => drawAll(document));
  document.addEventListener("htmx:afterSettle", () => drawAll(document));
})();
