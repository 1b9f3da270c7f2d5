// Draws every <canvas data-chart="<json_script id>"> with chart.js (bar or line), on load and after htmx swaps, and
// puts a "Download PNG" link under each (data-name: the file's name).
(function () {
  function pngLink(canvas, chart) {
    const link = document.createElement("a");
    link.textContent = "Download PNG";
    link.className = "png-download";
    link.download = (canvas.dataset.name || canvas.dataset.chart) + ".png";
    link.href = "#";
    link.addEventListener("click", () => { link.href = chart.toBase64Image("image/png", 1); });
    (canvas.closest(".chart-box") || canvas).insertAdjacentElement("afterend", link);
  }
  function draw(root) {
    if (!window.Chart) return;
    root.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
      if (canvas.dataset.drawn) return;
      const source = document.getElementById(canvas.dataset.chart);
      if (!source) return;
      const spec = JSON.parse(source.textContent);
      canvas.dataset.drawn = "1";
      const chart = new window.Chart(canvas, {
        type: spec.type || "bar",
        data: { labels: spec.labels, datasets: spec.datasets },
        options: {
          responsive: true, maintainAspectRatio: false, animation: false,
          scales: { y: { beginAtZero: true, title: { display: !!spec.unit, text: spec.unit || "" } } },
        },
      });
      pngLink(canvas, chart);
    });
  }
  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("htmx:load", (e) => draw(e.target));
})();
