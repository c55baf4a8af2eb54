// Security keys and passkeys (docs/security-keys.md): adding one on the account security page
// (#webauthn-add) and using one on a sign-in's second step (#webauthn-sign-in-form). The server
// sends the options as JSON with binary fields in base64url (tenants/webauthn.py); the browser's
// WebAuthn API takes and gives ArrayBuffers, so this file converts both ways.
(function () {
  "use strict";
  if (window.groundruleWebAuthn) return; // included by more than one section of a page
  window.groundruleWebAuthn = true;

  function toBuffer(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "===".slice((base64.length + 3) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)).buffer;
  }

  function toText(buffer) {
    let binary = "";
    new Uint8Array(buffer).forEach((b) => { binary += String.fromCharCode(b); });
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptors(list) {
    return (list || []).map((d) => Object.assign({}, d, { id: toBuffer(d.id) }));
  }

  function creationOptions(json) {
    return Object.assign({}, json, {
      challenge: toBuffer(json.challenge),
      user: Object.assign({}, json.user, { id: toBuffer(json.user.id) }),
      excludeCredentials: descriptors(json.excludeCredentials),
    });
  }

  function requestOptions(json) {
    return Object.assign({}, json, {
      challenge: toBuffer(json.challenge),
      allowCredentials: descriptors(json.allowCredentials),
    });
  }

  function registrationJSON(credential) {
    const r = credential.response;
    return {
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toText(r.clientDataJSON),
        attestationObject: toText(r.attestationObject),
        transports: typeof r.getTransports === "function" ? r.getTransports() : [],
      },
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
    };
  }

  function assertionJSON(credential) {
    const r = credential.response;
    return {
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      response: {
        clientDataJSON: toText(r.clientDataJSON),
        authenticatorData: toText(r.authenticatorData),
        signature: toText(r.signature),
        userHandle: r.userHandle ? toText(r.userHandle) : undefined,
      },
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
    };
  }

  async function post(url, form, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "X-CSRFToken": form.querySelector("[name=csrfmiddlewaretoken]").value,
      },
      body: JSON.stringify(body || {}),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = {}; }
    if (response.status === 403 && data.confirm_url) {
      // Adding a key needs a recent "confirm it's you" (docs/security-keys.md): go and give it.
      window.location.assign(data.confirm_url);
    }
    if (!response.ok) {
      const refused = new Error(data.error || "The server refused the request (" + response.status + ").");
      refused.fieldName = data.field;
      throw refused;
    }
    return data;
  }

  function browserProblem(error) {
    // The browser's own errors: the person cancelled, took too long, or the key is already there.
    if (error && error.name === "NotAllowedError") return "The security key request was cancelled or timed out. Try again.";
    if (error && error.name === "InvalidStateError") return "This security key is already registered to your account.";
    if (error && error.name === "SecurityError") return "This address cannot use security keys: it needs HTTPS and a domain name.";
    return error && error.message ? error.message : String(error);
  }

  function show(box, message, field) {
    box.textContent = message;
    box.hidden = false;
    if (field) {
      field.setAttribute("aria-invalid", "true");
      field.focus();
    } else {
      box.focus();
    }
  }

  function unsupported() {
    return !window.PublicKeyCredential || !navigator.credentials;
  }

  function wire(form, errorBox, run) {
    const button = form.querySelector("button[type=submit]");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      errorBox.hidden = true;
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      try {
        const next = await run();
        window.location.assign(next);
      } catch (error) {
        show(errorBox, browserProblem(error), error && error.field);
        button.disabled = false;
        button.removeAttribute("aria-busy");
      }
    });
  }

  function addKey(form) {
    const errorBox = document.getElementById("webauthn-add-error");
    const nameInput = form.querySelector("[name=name]");
    wire(form, errorBox, async () => {
      const name = nameInput.value.trim();
      nameInput.removeAttribute("aria-invalid");
      if (!name) {
        const missing = new Error("Give the key a name, so you can tell your keys apart.");
        missing.field = nameInput;
        throw missing;
      }
      const options = await post(form.dataset.optionsUrl, form);
      const credential = await navigator.credentials.create({ publicKey: creationOptions(options) });
      try {
        const done = await post(form.action, form, { name: name, credential: registrationJSON(credential) });
        return done.redirect;
      } catch (error) {
        if (error.fieldName === "name") error.field = nameInput;
        throw error;
      }
    });
  }

  function signIn(form) {
    const errorBox = document.getElementById("webauthn-sign-in-error");
    wire(form, errorBox, async () => {
      const options = await post(form.dataset.optionsUrl, form);
      const credential = await navigator.credentials.get({ publicKey: requestOptions(options) });
      const done = await post(form.dataset.verifyUrl, form, { credential: assertionJSON(credential) });
      return done.redirect;
    });
  }

  // The forms come hidden: they are shown only where this browser can use a key.
  function offer(form, errorBox, setUp) {
    if (!form) return;
    const note = form.parentElement.querySelector("[data-webauthn-needs-js]");
    if (note) note.hidden = true;
    if (unsupported()) {
      errorBox.textContent = "This browser cannot use security keys or passkeys.";
      errorBox.hidden = false;
      return;
    }
    setUp(form);
    form.hidden = false;
  }

  document.addEventListener("DOMContentLoaded", () => {
    offer(document.getElementById("webauthn-add"), document.getElementById("webauthn-add-error"), addKey);
    offer(
      document.getElementById("webauthn-sign-in-form"), document.getElementById("webauthn-sign-in-error"), signIn,
    );
  });
})();
