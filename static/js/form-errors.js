// A form refused by the server shows a summary of what to fix at its top (templates/includes/form_errors.html).
// Focus moves there as the page loads, so the refusal is seen and read out, not left below the fold;
// each error's link moves focus into its field (a plain #anchor only scrolls), opening a closed
// "Details" that holds it.
document.addEventListener("DOMContentLoaded", () => {
  const summary = document.querySelector("[data-error-summary]");
  if (summary) {
    summary.scrollIntoView({ block: "start" });
    summary.focus();
  }
});

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-error-link]");
  if (!link) return;
  const field = document.getElementById(decodeURIComponent(link.hash.slice(1)));
  if (!field) return;
  event.preventDefault();
  const details = field.closest("details");
  if (details) details.open = true;
  const label = document.querySelector(`label[for="${CSS.escape(field.id)}"]`) || field;
  label.scrollIntoView({ block: "start" });
  field.focus({ preventScroll: true });
});
