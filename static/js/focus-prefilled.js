// A form opened prefilled from another page (a material gap made a test question): its next field is
// focused and in view. `autofocus` alone is not enough: browsers skip it when the address names a
// fragment (#add-check), which is how the link brings the form into view.
(() => {
  "use strict";
  const field = document.querySelector("[data-focus-on-load]");
  if (!field) return;
  const focus = () => {
    field.focus({ preventScroll: true });
    field.scrollIntoView({ block: "center" });
  };
  // After the page's own scroll to the fragment, which would otherwise move the view again.
  if (document.readyState === "complete") focus();
  else window.addEventListener("load", focus, { once: true });
})();
