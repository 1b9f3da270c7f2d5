// Draws every <canvas data-chart="<json_script id>"> with chart.js (bar or line), on load and after htmx swaps.
(function () {
  function draw(root) {
    if (!window.Chart) return;
    root.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
      if (canvas.dataset.drawn) return;
      const source = document.getElementById(canvas.dataset.chart);
      if (!source) return;
      const spec = JSON.parse(source.textContent);
      canvas.dataset.drawn = "1";
      new window.Chart(canvas, {
        type: spec.type || "bar",
        data: { labels: spec.labels, datasets: spec.datasets },
        options: {
          responsive: true, maintainAspectRatio: false, animation: false,
          scales: { y: { beginAtZero: true, title: { display: !!spec.unit, text: spec.unit || "" } } },
        },
      });
    });
  }
  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("htmx:load", (e) => draw(e.target));
})();
