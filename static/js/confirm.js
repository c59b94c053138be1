// Forms with data-confirm ask before they submit (page scripts that send a form through the API,
// marked data-action, ask for themselves).
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !form.dataset.action && !window.confirm(form.dataset.confirm)) event.preventDefault();
});
