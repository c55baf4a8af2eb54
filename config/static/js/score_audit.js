// Draws the chosen agent's reported-against-measured chart from the JSON the page embeds (json_script).
// The same numbers are in the table under the chart, for screen readers and no-JS.
// A null is a day without samples: a gap in the line, never a zero. Each line has a band (the
// page's `margin`, wider for fewer samples) drawn as a floating bar; days under the few-samples mark
// are hollow points.
(function () {
  "use strict";

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function translucent(color) {
    return `color-mix(in srgb, ${color} 22%, transparent)`;
  }

  function band(label, low, high, color) {
    // A floating bar from low to high per day: visible for a lone day too, where a filled area
    // between two lines would have no neighbour to reach.
    return {
      type: "bar", label: `${label} range`, order: 2,
      data: low.map((value, i) => (value === null ? null : [value, high[i]])),
      backgroundColor: translucent(color), borderColor: color, borderWidth: 1,
      barPercentage: 0.9, categoryPercentage: 0.7,
    };
  }

  function line(label, values, few, color) {
    return {
      label, data: values, order: 1, borderColor: color, spanGaps: false, tension: 0.2, borderWidth: 2,
      pointRadius: 4, pointBorderColor: color,
      pointBackgroundColor: few.map((isFew) => (isFew ? "transparent" : color)),
    };
  }

  function draw(canvas) {
    if (typeof window.Chart === "undefined") return;
    const source = document.getElementById(canvas.dataset.scoreChart);
    if (!source) return;
    const data = JSON.parse(source.textContent);
    const text = cssVar("--gr-chart-text", "#475569");
    const grid = cssVar("--gr-chart-grid", "rgba(100, 116, 139, 0.18)");
    const reported = cssVar("--gr-warn", "#d97706");
    const measured = cssVar("--gr-accent", "#4f46e5");
    const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    new window.Chart(canvas, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: [
          band("Reported", data.reported_low, data.reported_high, reported),
          band("Measured", data.measured_low, data.measured_high, measured),
          line("Reported", data.reported, data.few_samples, reported),
          line("Measured", data.measured, data.few_samples, measured),
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reduced ? false : { duration: 300 },
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: {
            position: "bottom",
            labels: { color: text, usePointStyle: true, boxWidth: 8 },
          },
          tooltip: {
            filter: (item) => item.dataset.type !== "bar",
            callbacks: {
              label: (item) => `${item.dataset.label}: ${item.formattedValue} (n=${data.samples[item.dataIndex]})`,
            },
          },
        },
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
