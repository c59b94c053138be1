// A file's page review (collections/file.html): each page image zooms in place, by its button or by
// a click on the image, so a teacher reads the page beside the text they correct without leaving it.
(() => {
  "use strict";
  document.querySelectorAll(".review-image").forEach((figure) => {
    const frame = figure.querySelector(".review-frame");
    const button = figure.querySelector(".review-zoom");
    if (!frame || !button) return;
    const toggle = () => {
      const on = frame.classList.toggle("zoomed");
      button.setAttribute("aria-pressed", String(on));
      // A zoomed page scrolls inside its frame: reachable by keyboard (arrow keys) while zoomed.
      if (on) frame.setAttribute("tabindex", "0");
      else frame.removeAttribute("tabindex");
    };
    button.addEventListener("click", toggle);
    frame.querySelector("img")?.addEventListener("click", toggle);
    frame.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && frame.classList.contains("zoomed")) {
        toggle();
        button.focus();
      }
    });
  });
})();
