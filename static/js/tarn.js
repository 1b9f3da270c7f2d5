// Tarn's page glue: toasts that fade, and a toast when an htmx request fails.
(function () {
  function toast(text, kind) {
    const box = document.getElementById("toasts");
    if (!box) return;
    const el = document.createElement("div");
    el.className = "toast toast-" + (kind || "info");
    el.setAttribute("role", "status");
    el.textContent = text;
    box.appendChild(el);
    fade(el);
  }
  function fade(el) {
    setTimeout(() => { el.style.opacity = "0"; setTimeout(() => el.remove(), 500); }, 6000);
  }
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("#toasts .toast").forEach(fade);
  });
  document.addEventListener("htmx:responseError", (e) => {
    toast("The request failed (" + e.detail.xhr.status + "). Try again or reload the page.", "error");
  });
  document.addEventListener("htmx:sendError", () => toast("Tarn is not answering. Check that it is running.", "error"));
  document.addEventListener("toast", (e) => toast(e.detail.value || e.detail.message, e.detail.kind));
  window.tarnToast = toast;
})();
