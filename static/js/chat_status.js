// The chat page's lines about the service: the week's allowance in the composer and whether the
// language model is connected. Loaded before chat.js, which updates them after every answer
// (window.CurreChatStatus).
//
// Safety: it inserts no HTML; its sentences (with the model's name) go in as text.
(() => {
  "use strict";

  // `config` is chat.js's chat-config; `note`, `form` and `stopButton` are the composer's, where a
  // used-up allowance says when it starts again and keeps Send off. chat.js asks `usageLocked()`
  // before it sends or turns Send back on.
  function statusLines(config, { note, form, stopButton }) {
    // The week's use, as a bar and a sentence in the composer, refreshed after every answer. When the
    // allowance is used up the refusal shows where the student types and Send stays off until it starts
    // again; the time it starts again is written in the reader's own time zone and language.
    let usageLocked = false;
    let unlockTimer = null;

    function applyUsage(u) {
      const line = document.getElementById("usage-line");
      if (!line) return;
      const bar = document.getElementById("usage-bar");
      const when = localFormats.moment(u.resets_at);
      if (u.exhausted) line.textContent = interpolate(gettext("You have used this week's allowance. It starts again on %(when)s."), { when }, true);
      else if (u.warning && u.percent !== null) {
        const percent = localFormats.percent(u.percent / 100);
        const used = interpolate(gettext("You have used %(percent)s of this week's allowance."), { percent }, true);
        line.textContent = `${used} ${interpolate(gettext("It starts again on %(when)s."), { when }, true)}`;
      } else if (u.text) line.textContent = u.text;
      line.classList.toggle("warn", Boolean(u.warning));
      if (bar) {
        bar.hidden = u.percent === null;
        bar.value = u.percent || 0;
      }
      usageLocked = Boolean(u.exhausted);
      clearTimeout(unlockTimer);
      if (usageLocked) {
        note.textContent = interpolate(gettext("You can send messages again on %(when)s."), { when }, true);
        // Timers hold at most about 24 days; a week is well within.
        unlockTimer = setTimeout(refreshUsage, Math.min(Math.max(new Date(u.resets_at) - Date.now(), 1000) + 1000, 2 ** 31 - 1));
      } else if (note.dataset.usage) note.textContent = "";
      note.dataset.usage = usageLocked ? "1" : "";
      if (form) {
        const sendButton = document.getElementById("composer-send");
        if (usageLocked) sendButton.disabled = true;
        else if (stopButton.hidden) sendButton.disabled = false;
        document.querySelectorAll("#examples button.example").forEach((b) => (b.disabled = usageLocked));
      }
    }

    async function refreshUsage() {
      if (!config.usage) return;
      try {
        const response = await fetch(config.usage.path, { credentials: "same-origin" });
        if (!response.ok) return;
        const body = await response.json();
        const [row] = body.prompts;
        if (!row) return;
        const percent = row.share === null ? null : localFormats.wholePercent(row.share);
        applyUsage({ ...row, percent, resets_at: body.week_resets_at });
      } catch {
        // The line keeps its last figures; the next answer tries again.
      }
    }

    // Keep the status line honest: the server answers without a model when none is connected.
    // Students read whether the assistant is available; teachers (who get the model's name) which model.
    function showMode(message) {
      const status = document.querySelector("[data-testid=model-status]");
      if (!status) return;
      const extractive = message.mode === "extractive";
      status.classList.toggle("warn", extractive);
      status.classList.toggle("ok", !extractive);
      status.querySelector(".dot")?.classList.toggle("bad", extractive);
      status.querySelector(".dot")?.classList.toggle("ok", !extractive);
      const details = Boolean(config.model_status.model);
      let text;
      if (details) {
        text = extractive
          ? gettext("No language model connected: answers quote the course material without a language model.")
          : gettext("The language model is connected.");
        const named = status.querySelector("[data-testid=status-model]"); // behind the line's "Details"
        if (named && message.model) named.textContent = message.model;
      } else {
        text = extractive
          ? gettext("The assistant answers by quoting the course material: its language model is not connected.")
          : gettext("The assistant is available (connected).");
      }
      text = ` ${text} `;
      status.childNodes.forEach((node) => {
        if (node.nodeType === Node.TEXT_NODE && node.textContent.trim()) node.textContent = text;
      });
    }

    return { applyUsage, refreshUsage, usageLocked: () => usageLocked, showMode };
  }

  window.CurreChatStatus = { statusLines };
})();
