// The chat list on a phone: a modal dialog over the page. Opening moves focus into it and makes the
// rest of the page inert (so Tab stays inside); Escape, its Close button or a tap beside it closes
// it and gives focus back to the button that opened it. On a wide screen it is the left column.
// Loaded before chat.js, which sets it up when the page has the drawer's toggle
// (window.CurreChatDrawer).
//
// Safety: it inserts no HTML; its one new element (the backdrop) is made with createElement.
(() => {
  "use strict";

  function chatsDrawer(layout) {
    const toggle = layout.querySelector(".drawer-toggle");
    const drawer = document.getElementById("chat-sessions");
    const phone = window.matchMedia("(max-width: 800px)");
    const backdrop = document.createElement("div");
    backdrop.className = "drawer-backdrop";
    layout.append(backdrop);
    layout.classList.add("js-drawer");
    let inerted = [];

    function outside() {
      // Everything but the drawer: its siblings at each level up to <body>.
      const found = [];
      for (let node = drawer; node && node !== document.body; node = node.parentElement) {
        for (const sibling of node.parentElement.children) {
          if (sibling !== node && sibling !== backdrop && !sibling.inert && sibling.tagName !== "SCRIPT") found.push(sibling);
        }
      }
      return found;
    }
    function open() {
      layout.classList.add("drawer-open");
      toggle.setAttribute("aria-expanded", "true");
      drawer.setAttribute("role", "dialog");
      drawer.setAttribute("aria-modal", "true");
      inerted = outside();
      for (const node of inerted) node.inert = true;
      drawer.querySelector("a[aria-current], a, input")?.focus();
    }
    function close({ refocus = true } = {}) {
      if (!layout.classList.contains("drawer-open")) return;
      layout.classList.remove("drawer-open");
      toggle.setAttribute("aria-expanded", "false");
      drawer.removeAttribute("role");
      drawer.removeAttribute("aria-modal");
      for (const node of inerted) node.inert = false;
      inerted = [];
      if (refocus) toggle.focus();
    }
    toggle.addEventListener("click", open);
    drawer.querySelector(".drawer-close")?.addEventListener("click", () => close());
    backdrop.addEventListener("click", () => close());
    document.addEventListener("keydown", (event) => {
      if (!layout.classList.contains("drawer-open")) return;
      if (event.key === "Escape") close();
      if (event.key !== "Tab") return;
      // From the last control Tab goes round to the first (and back with Shift), not out of the page.
      const controls = [...drawer.querySelectorAll("a[href], button, input, select, textarea")].filter(
        (node) => !node.disabled && node.offsetParent !== null,
      );
      const [first, last] = [controls[0], controls[controls.length - 1]];
      if (event.shiftKey ? document.activeElement === first : document.activeElement === last) {
        event.preventDefault();
        (event.shiftKey ? last : first)?.focus();
      }
    });
    phone.addEventListener("change", () => close({ refocus: false }));  // a wide screen shows it as a column
  }

  window.CurreChatDrawer = { chatsDrawer };
})();
