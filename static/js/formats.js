// Dates and numbers as the page's language writes them (<html lang>), never the browser's own locale:
// the shapes the server writes (kernel/formats.py, with currechat/formats/<lang>/formats.py), so a time
// this script writes reads like one the server wrote. Intl's "medium" English date and its "short"
// Finnish and Swedish ones are exactly those shapes ("Mar 5, 2025, 2:30 PM", "5.3.2025 klo 14.30",
// "2025-03-05 14:30"); tests/browser/test_locale_formats_journey.py holds the two side by side.
// Times are written in the reader's own time zone (the browser's).
(() => {
  "use strict";
  const lang = document.documentElement.lang || "en";
  const DATE_STYLE = { en: "medium", fi: "short", sv: "short" };
  const dateStyle = DATE_STYLE[lang] || "medium";
  const numbers = new Intl.NumberFormat(lang);
  const percents = new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 });
  const moments = new Intl.DateTimeFormat(lang, { dateStyle, timeStyle: "short" });
  const days = new Intl.DateTimeFormat(lang, { dateStyle });

  // A share (0.29) as whole percent (29), rounded down as the server does: a budget reads 100% only
  // once it is used up. Rounded to six places first: 0.29 * 100 is 28.999999999999996 in floating point.
  function wholePercent(share) {
    return Math.floor(Number((share * 100).toFixed(6)));
  }

  window.localFormats = {
    number: (n) => numbers.format(n),
    wholePercent,
    percent: (share) => percents.format(wholePercent(share) / 100),
    moment: (iso) => moments.format(new Date(iso)),
    day: (iso) => days.format(new Date(iso)),
  };
})();
