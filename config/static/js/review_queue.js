// The violations list as a review queue, from the keyboard: j/k move through the rows, x selects the
// row, c/d confirm or dismiss the selected rows (the row under the cursor when none is), o or Enter
// opens it. Without JavaScript the checkboxes and buttons do the same.
(() => {
  "use strict";
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  let current = -1;

  const rows = () => Array.from(document.querySelectorAll("[data-review-queue] tbody tr[data-id]"));

  function move(step) {
    const all = rows();
    if (!all.length) return;
    current = Math.max(0, Math.min(all.length - 1, current + step));
    all.forEach((row, n) => row.classList.toggle("is-cursor", n === current));
    const link = all[current].querySelector("a");
    if (link) link.focus();
  }

  function review(state) {
    const form = document.getElementById("bulk-review");
    if (!form) return;
    const boxes = Array.from(form.querySelectorAll('input[name="ids"]'));
    if (!boxes.some((b) => b.checked)) {
      const row = rows()[current];
      const box = row && row.querySelector('input[name="ids"]');
      if (!box) return;
      box.checked = true;
    }
    const button = form.querySelector(`button[name="state"][value="${state}"]`);
    if (button) form.requestSubmit(button);
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const row = rows()[current];
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "x": {
        const box = row && row.querySelector('input[name="ids"]');
        if (box) box.checked = !box.checked;
        break;
      }
      case "c": review("confirmed"); break;
      case "d": review("dismissed"); break;
      case "o": {
        const link = row && row.querySelector("a");
        if (link) link.click();
        break;
      }
      default: return;
    }
    event.preventDefault();
  });
  // A new page of results (htmx) starts the cursor again.
  document.addEventListener("htmx:afterSwap", () => { current = -1; });
})();
