// Passkeys and security keys (WebAuthn): the server's options in, the authenticator's answer out, as JSON.
// A button with data-passkey="register|login" and data-options / data-url (and data-name-input for a new key's
// name) does the whole exchange; errors go to the element named by data-error, new recovery codes to the section
// named by data-codes. No library, no CDN.
(function () {
  "use strict";

  function b64urlToBytes(text) {
    const pad = "=".repeat((4 - (text.length % 4)) % 4);
    const raw = atob((text + pad).replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(raw, (c) => c.charCodeAt(0));
  }

  function bytesToB64url(buffer) {
    let raw = "";
    new Uint8Array(buffer).forEach((b) => { raw += String.fromCharCode(b); });
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function csrf() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: body === undefined ? "{}" : JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = {}; }
    if (!response.ok) {
      const errors = data.errors || {};
      const said = Object.values(errors).flat().join(" ") || "The server refused it (" + response.status + ").";
      throw new Error(said);
    }
    return data;
  }

  function creationOptions(options) {
    options.challenge = b64urlToBytes(options.challenge);
    options.user.id = b64urlToBytes(options.user.id);
    (options.excludeCredentials || []).forEach((c) => { c.id = b64urlToBytes(c.id); });
    return options;
  }

  function requestOptions(options) {
    options.challenge = b64urlToBytes(options.challenge);
    (options.allowCredentials || []).forEach((c) => { c.id = b64urlToBytes(c.id); });
    return options;
  }

  function asJson(credential) {
    const r = credential.response;
    const response = { clientDataJSON: bytesToB64url(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = bytesToB64url(r.attestationObject);
      if (r.getTransports) response.transports = r.getTransports();
    } else {
      response.authenticatorData = bytesToB64url(r.authenticatorData);
      response.signature = bytesToB64url(r.signature);
      if (r.userHandle) response.userHandle = bytesToB64url(r.userHandle);
    }
    return { id: credential.id, rawId: bytesToB64url(credential.rawId), type: credential.type, response: response,
      clientExtensionResults: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {} };
  }

  // A first factor's recovery codes come in the answer that made them (never kept by the server): shown once here.
  function showCodes(section, codes) {
    const list = section.querySelector("ol");
    codes.forEach((c) => {
      const item = document.createElement("li");
      const code = document.createElement("code");
      code.textContent = c;
      item.append(code);
      list.append(item);
    });
    Array.from(section.parentElement.children).forEach((el) => { el.hidden = el !== section; });
  }

  async function run(button) {
    const error = document.getElementById(button.dataset.error || "passkey-error");
    if (error) error.textContent = "";
    try {
      if (!window.PublicKeyCredential) throw new Error("This browser cannot use passkeys.");
      const body = {};
      if (button.dataset.nameInput) {
        body.name = document.getElementById(button.dataset.nameInput).value;
        if (!body.name.trim()) throw new Error("Name the key first.");
      }
      const got = await post(button.dataset.options);
      const options = JSON.parse(got.options);
      let credential;
      if (button.dataset.passkey === "register") {
        credential = await navigator.credentials.create({ publicKey: creationOptions(options) });
      } else {
        credential = await navigator.credentials.get({ publicKey: requestOptions(options) });
      }
      body.credential = asJson(credential);
      const done = await post(button.dataset.url, body);
      if (done.codes && done.codes.length && button.dataset.codes) {
        showCodes(document.getElementById(button.dataset.codes), done.codes);
        return;
      }
      window.location.assign(done.next || "/");
    } catch (exc) {
      if (!error) return;
      if (exc && exc.name === "NotAllowedError") {
        // Cancelled, timed out, or no passkey of this address: the browser does not say which (on purpose).
        error.textContent = "No passkey was used. A passkey works only at the address it was registered at (" +
          window.location.hostname + " here); cancelled or timed out, try again.";
      } else {
        error.textContent = exc.message || String(exc);
      }
    }
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-passkey]");
    if (!button) return;
    event.preventDefault();
    run(button);
  });
})();
