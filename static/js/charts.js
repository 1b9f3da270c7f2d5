// Draws every <canvas data-chart="<json_script id>"> with chart.js (bar or line), on load and after htmx swaps, and
// puts a "Download PNG" link under each (data-name: the file's name). A spec may carry markers ([{index, label}],
// drawn as dashed vertical lines) and a unit ("B/s" ticks read KiB/s, MiB/s…). A .chart-box with data-href opens it
// when clicked (the analytics page's drill-down). Charts whose canvas left the page are destroyed.
(function () {
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  function bytes(v) {
    let i = 0;
    while (Math.abs(v) >= 1024 && i < UNITS.length - 1) { v /= 1024; i += 1; }
    return Number(v.toFixed(1)) + " " + UNITS[i] + "/s";
  }
  const markers = {
    id: "tarnMarkers",
    afterDatasetsDraw(chart, args, options) {
      const marks = options.marks || [];
      const { ctx, chartArea, scales } = chart;
      ctx.save();
      ctx.strokeStyle = "#b45309"; ctx.fillStyle = "#b45309"; ctx.setLineDash([4, 3]); ctx.font = "10px sans-serif";
      marks.forEach((m) => {
        const x = scales.x.getPixelForValue(m.index);
        ctx.beginPath(); ctx.moveTo(x, chartArea.top); ctx.lineTo(x, chartArea.bottom); ctx.stroke();
        ctx.fillText(m.label.slice(0, 28), x + 3, chartArea.top + 10);
      });
      ctx.restore();
    },
  };
  function pngLink(canvas, chart) {
    const link = document.createElement("a");
    link.textContent = "Download PNG";
    link.className = "png-download";
    link.download = (canvas.dataset.name || canvas.dataset.chart) + ".png";
    link.href = "#";
    link.addEventListener("click", () => { link.href = chart.toBase64Image("image/png", 1); });
    (canvas.closest(".chart-box") || canvas).insertAdjacentElement("afterend", link);
  }
  function forget() {
    if (!window.Chart) return;
    Object.values(window.Chart.instances || {}).forEach((c) => { if (!document.body.contains(c.canvas)) c.destroy(); });
  }
  function draw(root) {
    if (!window.Chart) return;
    forget();
    root.querySelectorAll("canvas[data-chart]").forEach((canvas) => {
      if (canvas.dataset.drawn) return;
      const source = document.getElementById(canvas.dataset.chart);
      if (!source) return;
      const spec = JSON.parse(source.textContent);
      canvas.dataset.drawn = "1";
      const y = { beginAtZero: true, title: { display: !!spec.unit, text: spec.unit || "" } };
      if (spec.unit === "B/s") y.ticks = { callback: bytes };
      const chart = new window.Chart(canvas, {
        type: spec.type || "bar",
        data: { labels: spec.labels, datasets: spec.datasets },
        plugins: [markers],
        options: {
          responsive: true, maintainAspectRatio: false, animation: false, spanGaps: true,
          interaction: { mode: "index", intersect: false },
          scales: { x: { ticks: { maxTicksLimit: 6, maxRotation: 0 } }, y },
          plugins: { tarnMarkers: { marks: spec.markers || [] } },
        },
      });
      const box = canvas.closest(".chart-box");
      if (box && box.dataset.href) {
        box.style.cursor = "pointer";
        box.addEventListener("click", () => { window.location.href = box.dataset.href; });
      }
      pngLink(canvas, chart);
    });
  }
  document.addEventListener("DOMContentLoaded", () => draw(document));
  document.addEventListener("htmx:load", (e) => draw(e.target));
})();
