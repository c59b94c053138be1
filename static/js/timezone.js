// Tells the server the reader's time zone (kernel/zones.py): every time a page writes after this one
// is in it. A cookie, not a request per page: set once, and again only when the zone changes (a
// laptop that travelled).
(() => {
  "use strict";
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!zone) return;
  // Written as it is ("America/New_York"): zone names hold only letters, digits, "_", "+", "-" and "/",
  // all allowed in a cookie; the server reads the value raw.
  if (!/^[A-Za-z0-9_+\-/]+$/.test(zone)) return;
  const sent = document.cookie.split("; ").find((c) => c.startsWith("tz="));
  if (sent && sent.slice(3) === zone) return;
  const secure = location.protocol === "https:" ? "; Secure" : "";
  document.cookie = `tz=${zone}; path=/; max-age=31536000; SameSite=Lax${secure}`;
})();
