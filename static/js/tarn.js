// Tarn's page glue: toasts that fade, a toast when an htmx request fails, and copying or downloading what a page
// shows once (data-copy / data-download name the element whose <code> items are the text; nothing goes to the server).
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
    // A form that came back refused: the cursor goes to the first field with an error (the page scrolls to it).
    const refused = document.querySelector(".has-error input, .has-error select, .has-error textarea");
    if (refused) refused.focus();
  });
  // The main menu works without script (<details>); this keeps one group open at a time and closes it on Escape
  // (the focus goes back to its summary) or on a click elsewhere.
  document.addEventListener("toggle", (e) => {
    if (!e.target.matches || !e.target.matches(".menu") || !e.target.open) return;
    document.querySelectorAll(".menu[open]").forEach((menu) => { if (menu !== e.target) menu.open = false; });
  }, true);
  document.addEventListener("keydown", (e) => {
    const menu = e.key === "Escape" && document.querySelector(".menu[open]");
    if (!menu) return;
    menu.open = false;
    if (menu.contains(document.activeElement)) menu.querySelector("summary").focus();
  });
  document.addEventListener("click", (e) => {
    document.querySelectorAll(".menu[open]").forEach((menu) => { if (!menu.contains(e.target)) menu.open = false; });
  });
  document.addEventListener("htmx:responseError", (e) => {
    toast("The request failed (" + e.detail.xhr.status + "). Try again or reload the page.", "error");
  });
  document.addEventListener("htmx:sendError", () => toast("Tarn is not answering. Check that it is running.", "error"));
  document.addEventListener("toast", (e) => toast(e.detail.value || e.detail.message, e.detail.kind));
  window.tarnToast = toast;

  function shownText(button) {
    const source = document.getElementById(button.dataset.copy || button.dataset.download);
    const items = source ? Array.from(source.querySelectorAll("code")).map((c) => c.textContent.trim()) : [];
    return items.join("\n");
  }
  function copied(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain http on a LAN has no clipboard API: select the text in a scratch box and copy it the old way.
    const box = document.createElement("textarea");
    box.value = text;
    box.setAttribute("readonly", "");
    box.style.position = "fixed";
    box.style.opacity = "0";
    document.body.appendChild(box);
    box.select();
    const ok = document.execCommand("copy");
    box.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  document.addEventListener("click", (e) => {
    const copy = e.target.closest("[data-copy]");
    if (copy) {
      copied(shownText(copy)).then(
        () => toast("Copied to the clipboard.", "success"),
        () => toast("The browser refused to copy: select the codes and copy them by hand.", "error"),
      );
      return;
    }
    const download = e.target.closest("[data-download]");
    if (download) {
      const heading = download.dataset.heading ? download.dataset.heading + "\n\n" : "";
      const blob = new Blob([heading + shownText(download) + "\n"], { type: "text/plain" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = download.dataset.filename || "tarn.txt";
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 1000);
    }
  });
})();
