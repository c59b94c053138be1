// gettext() comes from the JavaScript catalogue (base.html loads it before the page scripts).
// "Copy link" buttons: copy the target input's value and say so.
document.querySelectorAll("[data-copy]").forEach((button) => {
  button.addEventListener("click", async () => {
    const input = document.querySelector(button.dataset.copy);
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      document.execCommand("copy");
    }
    const label = button.textContent;
    button.textContent = gettext("Copied");
    setTimeout(() => (button.textContent = label), 1500);
  });
});
