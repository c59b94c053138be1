// How the chat page draws a message: the student's bubble, and an assistant's answer with its
// searches and sources (chat_sources.js), its tools (copy, regenerate, retry) and its rating.
// Loaded after chat_sources.js and before chat.js, which draws the conversation with these
// (window.CurreChatMessages).
//
// Safety: the only HTML inserted is `message.html`, which the server built from Markdown and
// sanitised with an allowlist (chat/rendering.py). Everything else — the student's text, comments,
// model names, file names — goes in as text nodes.
(() => {
  "use strict";
  const { el, searchesBox, summarise, searchBlock, fillSearch, citationsBlock } = window.CurreChatSources;

  // `config` is chat.js's chat-config, read as each message is drawn or rated, so what chat.js
  // changes in it (a new chat's `feedback`) counts at once. `askAgain` sends Retry or Regenerate
  // through chat.js, as any message goes (with the model the student chose).
  function messageViews(config, askAgain) {
    // What the leak guard (tutor mode) or the safety check did to an answer: a note for the prompt's
    // teachers (`config.guard_notes`); the student reads the answer they got, without it.
    function guardNote(message) {
      if (!config.guard_notes || !message.guard) return null;
      const notes = {
        rewritten: gettext("Rewritten: the first answer gave the protected material away; the student got this hint instead."),
        withheld: gettext("Withheld: both answers gave the protected material away; the student got this sentence instead."),
        flagged: gettext("The safety check stopped the student's message; the student got this reply instead of an answer."),
        flagged_output: gettext("The safety check stopped the assistant's answer; the student got this sentence instead."),
      };
      if (!notes[message.guard]) return null;
      return el("div", { class: "label guard-note", "data-testid": "guard-note", "data-guard": message.guard, text: notes[message.guard] });
    }

    function renderAssistant(message, isLast) {
      const box = el("article", { class: `msg assistant ${message.status}`, "data-message": String(message.id) });
      if (message.mode === "extractive") box.append(el("div", { class: "label", text: gettext("Without a language model: quoted passages") }));
      // The teacher's own answer to this question, served without the assistant (chat/insight/answers.py).
      if (message.answered_by === "teacher") box.append(el("div", { class: "label teacher-answer", "data-testid": "teacher-answer-label", text: gettext("Your teacher's answer to this question") }));
      const note = guardNote(message);
      if (note) box.append(note);
      const results = Object.fromEntries((message.tool_results || []).map((r) => [r.tool_call_id, r]));
      const searches = searchesBox();
      for (const call of message.tool_calls || []) {
        const block = searchBlock(call);
        // A stored call without a result is one that never finished (the turn failed or stopped).
        if (results[call.id]) fillSearch(block, results[call.id]);
        else if (message.status !== "streaming" && message.status !== "pending") fillSearch(block, { status: "error", error: gettext("not finished"), query: call.query });
        searches.querySelector(".search-steps").append(block);
      }
      summarise(searches);
      searches.hidden = !(message.tool_calls || []).length;
      box.append(searches);
      const answer = el("div", { class: "answer" });
      if (["complete", "failed", "stopped"].includes(message.status)) {
        answer.innerHTML = message.html; // sanitised on the server (see top of file)
      } else {
        answer.className = "answer streaming";
        answer.textContent = message.content || "…";
      }
      box.append(answer);
      if (config.show_models && message.mode === "model" && message.model && ["complete", "stopped"].includes(message.status)) {
        const by = el("p", { class: "answered-by muted", "data-testid": "answered-by", text: interpolate(gettext("Answered by %(model)s"), { model: message.model }, true) });
        // A model the student chose is named plainly; otherwise its name is for the curious teacher.
        box.append(config.models_chosen ? by : el("details", { class: "more answered-by-details" }, el("summary", { text: gettext("Details") }), by));
      }
      const cites = citationsBlock(message);
      if (cites) box.append(cites);
      if (message.status === "stopped") box.append(el("p", { class: "muted", text: gettext("You stopped this answer.") }));
      if (message.status === "complete" || message.status === "stopped") box.append(answerTools(message, isLast));
      const rating = hasText(message) ? feedbackControls(message) : null; // nothing to rate in an empty answer
      if (rating) box.append(rating);
      if (message.status === "failed") {
        box.append(el("p", { class: "error", text: message.error || gettext("The answer failed.") }));
        if (isLast && config.writable) {
          const retry = el("button", { type: "button", class: "retry", text: gettext("Retry") });
          retry.addEventListener("click", () => askAgain({ type: "retry" }));
          box.append(retry);
        }
      }
      return box;
    }

    function userBubble(text, attachment) {
      const box = el("div", { class: "msg user", text });
      if (attachment) box.append(el("span", { class: "attachment-chip", text: interpolate(gettext("Attached: %(name)s"), { name: attachment }, true) }));
      return box;
    }

    // Copy an answer's text (when it has any); answer the last question again (the earlier answer
    // stays, and the new one says it is another answer).
    function answerTools(message, isLast) {
      const tools = el("div", { class: "answer-tools" });
      if (hasText(message)) tools.append(copyButton(message));
      if (isLast && config.writable && message.answered_by === "teacher") {
        // The student may still want the assistant's own answer: the normal turn, on their budget.
        const ask = el("button", { type: "button", class: "link", text: gettext("Ask the assistant instead"), "data-testid": "ask-assistant" });
        ask.addEventListener("click", () => askAgain({ type: "regenerate" }));
        tools.append(ask);
      } else if (isLast && config.writable) {
        const again = el("button", { type: "button", class: "link", text: gettext("Regenerate"), "data-testid": "regenerate" });
        again.addEventListener("click", () => askAgain({ type: "regenerate" }));
        tools.append(again);
      }
      return tools;
    }

    function hasText(message) {
      return Boolean((message.content || "").trim());
    }

    function copyButton(message) {
      const copy = el("button", { type: "button", class: "link", text: gettext("Copy answer") });
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(message.content);
          copy.textContent = gettext("Copied");
        } catch {
          copy.textContent = gettext("Could not copy");
        }
        setTimeout(() => (copy.textContent = gettext("Copy answer")), 1500);
      });
      return copy;
    }

    // --- Feedback: thumbs up or down, with an optional comment, on each finished answer ----------
    // `config.feedback` is {message id: {rating, comment}} for the student's own chat, else null.

    function csrfToken() {
      const match = document.cookie.match(/(?:^|; )csrftoken=([^;]*)/);
      if (match) return decodeURIComponent(match[1]);
      const field = document.querySelector("input[name=csrfmiddlewaretoken]");
      return field ? field.value : "";
    }

    async function sendFeedback(messageId, body, status, done = gettext("Thanks!")) {
      status.textContent = gettext("Saving…");
      try {
        const response = await fetch(`/api/v1/messages/${messageId}/feedback`, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
          body: JSON.stringify(body),
        });
        const data = await response.json();
        if (!response.ok) throw new Error(data.detail || gettext("Could not save your feedback."));
        config.feedback[messageId] = { rating: data.rating, comment: data.comment };
        status.textContent = `${done} ${config.feedback_note}`;
        return true;
      } catch (error) {
        status.textContent = error.message || gettext("Could not save your feedback; try again.");
        return false;
      }
    }

    // A teacher reading a student's chat sees the student's rating of each answer, and its comment.
    function ratingRead(message) {
      const given = (config.ratings_read || {})[message.id];
      if (!given) return null;
      const rating = given.rating === "up" ? gettext("Helpful") : gettext("Not helpful");
      const line = el("p", { class: "feedback feedback-read muted", "data-testid": "student-rating" });
      line.append(interpolate(gettext("The student rated this answer: %s"), [rating]));
      if (given.comment) line.append(" ", el("q", { text: given.comment }));
      return line;
    }

    function feedbackControls(message) {
      if (config.ratings_read) return ratingRead(message);
      if (!config.feedback || !["complete", "stopped"].includes(message.status)) return null;
      const given = config.feedback[message.id] || { rating: null, comment: "" };
      const box = el("div", { class: "feedback", "data-testid": "feedback" });
      const status = el("span", { class: "muted feedback-status", role: "status" });
      const comment = el("textarea", { rows: "2", maxlength: "2000", "aria-label": gettext("Comment on this answer (optional)"), placeholder: gettext("What was good or missing? (optional)") });
      comment.value = given.comment || "";
      const save = el("button", { type: "button", class: "secondary", text: gettext("Send comment") });
      const details = el("div", { class: "feedback-comment" }, comment, save);
      details.hidden = !given.rating;
      // Words, not emoji: they read the same with every font and screen reader.
      const buttons = [["up", gettext("Helpful")], ["down", gettext("Not helpful")]].map(([rating, label]) => {
        const button = el("button", { type: "button", class: "rate", "aria-pressed": String(given.rating === rating), "data-rating": rating, text: label });
        button.addEventListener("click", async () => {
          if (await sendFeedback(message.id, { rating, comment: comment.value }, status)) {
            for (const b of buttons) b.setAttribute("aria-pressed", String(b === button));
            details.hidden = false;
          }
        });
        return button;
      });
      save.addEventListener("click", () => {
        const rating = (config.feedback[message.id] || {}).rating;
        if (rating) sendFeedback(message.id, { rating, comment: comment.value }, status, comment.value.trim() ? gettext("Your comment was sent.") : gettext("Saved."));
      });
      box.append(el("span", { class: "muted", text: gettext("Was this helpful?") }), ...buttons, status, details);
      return box;
    }

    return { renderAssistant, userBubble };
  }

  window.CurreChatMessages = { messageViews };
})();
