// Deep linking's answer goes back to the learning platform at once; the button stays for browsers without scripts.
document.querySelectorAll("form[data-autosubmit]").forEach((form) => form.submit());
