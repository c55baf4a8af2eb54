// Groundrule dashboard: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // ---- toasts: server responses send HX-Trigger: {"toast": {"message": ..., "level": ...}} ----
  function toast(message, level) {
    var box = document.getElementById("toasts");
    if (!box || !message) return;
    var item = document.createElement("div");
    item.className = "toast" + (level === "error" ? " toast-error" : "");
    item.setAttribute("role", level === "error" ? "alert" : "status");
    item.textContent = message;
    box.appendChild(item);
    setTimeout(function () {
      item.classList.add("leaving");
      setTimeout(function () { item.remove(); }, 250);
    }, level === "error" ? 6000 : 3500);
  }
  window.groundruleToast = toast;

  document.addEventListener("toast", function (event) {
    var detail = event.detail || {};
    toast(detail.message || detail.value, detail.level);
  });

  // htmx leaves the page as it was on an error status; say what happened.
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 400 && event.detail.xhr.getResponseHeader("HX-Trigger")) return; // already told
    var text = {
      403: "You don't have permission to do that in this tenant.",
      404: "That no longer exists, or belongs to another tenant.",
      413: "That is too large to send.",
    }[status] || "Something went wrong (" + status + "). Nothing was changed.";
    toast(text, "error");
  });
  document.addEventListener("htmx:sendError", function () {
    toast("The server could not be reached. Check your connection and try again.", "error");
  });

  // Live validation swaps "<id>_error"; keep the input's aria-invalid / aria-describedby in step.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail.target;
    if (!target || !target.id || target.id.slice(-6) !== "_error") return;
    var errors = document.getElementById(target.id);
    var input = document.getElementById(target.id.slice(0, -6));
    if (!errors || !input) return;
    var invalid = errors.textContent.trim() !== "";
    var described = (input.getAttribute("aria-describedby") || "").split(/\s+/).filter(function (id) {
      return id && id !== errors.id;
    });
    if (invalid) {
      input.setAttribute("aria-invalid", "true");
      described.push(errors.id);
    } else {
      input.removeAttribute("aria-invalid");
    }
    if (described.length) input.setAttribute("aria-describedby", described.join(" "));
    else input.removeAttribute("aria-describedby");
    var field = input.closest(".field");
    if (field) field.classList.toggle("has-error", invalid);
  });

  // Filter forms: leave empty fields out of the URL, so a pushed URL reads ?enabled=false, not ?q=&enabled=false.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (event.detail.verb !== "get" || !elt || !elt.closest || !elt.closest("[data-drop-empty]")) return;
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) {
      if (params[key] === "") delete params[key];
    });
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var results = event.detail.target;
    if (results && results.classList && results.classList.contains("results")) results.setAttribute("aria-busy", "true");
  });

  // ---- small behaviours, declared in the markup ----
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.matches && el.matches("select[data-autosubmit]") && el.form) {
      if (el.form.requestSubmit) el.form.requestSubmit();
      else el.form.submit();
    }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var value = source.value || source.textContent;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      toast("Copied to the clipboard.");
      setTimeout(function () { button.textContent = label; }, 1800);
    };
    // Without the Clipboard API (plain http): select the text and copy the selection; a snippet's
    // <code> has no select() of its own.
    var fallback = function () {
      if (source.select) {
        source.select();
      } else {
        var range = document.createRange();
        range.selectNodeContents(source);
        window.getSelection().removeAllRanges();
        window.getSelection().addRange(range);
      }
      document.execCommand("copy");
      done();
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(value).then(done, fallback);
    } else {
      fallback();
    }
  });

  document.addEventListener("focusin", function (event) {
    if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
  });

  // Close the account menu when clicking elsewhere or pressing Escape.
  document.addEventListener("click", function (event) {
    document.querySelectorAll("details.usermenu[open]").forEach(function (menu) {
      if (!menu.contains(event.target)) menu.removeAttribute("open");
    });
  });

  function onReady() {
    var focus = document.querySelector("[data-focus-on-load]");
    if (focus) focus.focus();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", onReady);
  else onReady();

  // ---- keyboard shortcuts ----
  var GO = { o: "/", p: "/policies/", r: "/runs/", v: "/violations/", a: "/audit/", s: "/settings/secrets/" };
  var pendingG = 0;

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return el.isContentEditable || tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      document.querySelectorAll("details.usermenu[open]").forEach(function (menu) { menu.removeAttribute("open"); });
      if (typing(event.target) && event.target.type === "search") event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var key = event.key;
    if (pendingG && Date.now() - pendingG < 1200) {
      pendingG = 0;
      var path = GO[key];
      if (key === "s") {
        var settings = document.querySelector('.mainnav a[href^="/settings/"]');
        if (settings) path = settings.getAttribute("href");
      }
      if (path) {
        event.preventDefault();
        window.location.assign(path);
      }
      return;
    }
    if (key === "g") {
      pendingG = Date.now();
      return;
    }
    if (key === "/") {
      var search = document.querySelector("[data-search], main input[type=search]");
      if (search) {
        event.preventDefault();
        search.focus();
        search.select();
      }
      return;
    }
    if (key === "?") {
      var dialog = document.getElementById("shortcuts");
      if (dialog && dialog.showModal && !dialog.open) {
        event.preventDefault();
        dialog.showModal();
      }
      return;
    }
    if (!/^[a-z]$/.test(key)) return;
    var shortcut = document.querySelector('[data-shortcut="' + key + '"]');
    if (shortcut) {
      event.preventDefault();
      shortcut.click();
    }
  });
})();

// Forms that ask before they submit (data-confirm): no inline handlers, which the CSP refuses.
document.addEventListener("submit", (event) => {
  const message = event.target instanceof HTMLFormElement ? event.target.dataset.confirm : undefined;
  if (message && !window.confirm(message)) event.preventDefault();
});
