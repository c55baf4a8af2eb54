// Draws the overview chart from the JSON the page embeds (json_script); redrawn after an htmx swap
// of the period. The same numbers are in the table under the chart, for screen readers and no-JS.
(function () {
  "use strict";
  const charts = new WeakMap();

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function draw(canvas) {
    if (typeof window.Chart === "undefined") return;
    const source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    const data = JSON.parse(source.textContent);
    const previous = charts.get(canvas);
    if (previous) previous.destroy();
    const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    const text = cssVar("--gr-chart-text", "#475569");
    const grid = cssVar("--gr-chart-grid", "rgba(100, 116, 139, 0.18)");
    const chart = new window.Chart(canvas, {
      data: {
        labels: data.labels,
        datasets: [
          { type: "bar", label: "Blocks", data: data.blocks, backgroundColor: cssVar("--gr-block", "#dc2626"),
            stack: "violations", yAxisID: "y", borderRadius: 3, order: 2 },
          { type: "bar", label: "Warnings", data: data.warns, backgroundColor: cssVar("--gr-warn", "#d97706"),
            stack: "violations", yAxisID: "y", borderRadius: 3, order: 2 },
          { type: "line", label: "Runs", data: data.runs, borderColor: cssVar("--gr-accent", "#4f46e5"),
            backgroundColor: cssVar("--gr-accent", "#4f46e5"), yAxisID: "y", tension: 0.3, pointRadius: 2,
            borderWidth: 2, order: 1 },
        ],
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
    (root || document).querySelectorAll("canvas[data-chart]").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", () => drawAll(document));
  document.addEventListener("htmx:afterSettle", () => drawAll(document));
})();
