// LTI Dynamic Registration's last step: tell the platform's page (which opened this one in a frame or
// a window) that registration is done, so it closes this page and refreshes its tool list.
(function () {
  const target = window.opener || (window.parent !== window ? window.parent : null);
  const done = () => target && target.postMessage({ subject: "org.imsglobal.lti.close" }, "*");
  done();
  document.querySelectorAll("[data-lti-close]").forEach((button) => button.addEventListener("click", done));
})();
