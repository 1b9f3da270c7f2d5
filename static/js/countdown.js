// Counts down every [data-deadline] (ISO time) each second: the rollback a network change waits for.
(function () {
  function tick() {
    document.querySelectorAll("[data-deadline]").forEach((el) => {
      const left = Math.max(0, Math.round((Date.parse(el.dataset.deadline) - Date.now()) / 1000));
      el.textContent = left > 0 ? left + " s" : "now";
    });
  }
  document.addEventListener("DOMContentLoaded", () => { tick(); setInterval(tick, 1000); });
  document.addEventListener("htmx:load", tick);
})();
