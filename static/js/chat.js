// The chat page: renders the conversation, streams answers over /ws/chats/{id}/, reconnects.
//
// Safety: the only HTML inserted is `message.html`, which the server built from Markdown and
// sanitised with an allowlist (chat/rendering.py). Everything else — the student's text, streamed
// tokens, search queries, passages, file names — goes in as text nodes.
(() => {
  "use strict";
  const config = JSON.parse(document.getElementById("chat-config").textContent);
  const conversation = document.getElementById("conversation");
  const form = document.getElementById("composer");
  const input = document.getElementById("composer-input");
  const note = document.getElementById("composer-note");
  const connection = document.getElementById("connection-status");
  let messages = config.messages;
  let socket = null;
  let retryDelay = 1000;
  let live = null; // the assistant message being streamed: {id, el, answer, searches}
  let pendingText = null; // what we sent, until the server accepts or refuses it
  let pendingAttachment = null; // the name of the file sent with it
  const attachInput = document.getElementById("composer-attachment");
  // The model the student chose (shown only when the teacher offers several): every message carries
  // it, so the server checks it against the prompt's list as it is then, and the chat keeps it.
  const modelSelect = document.getElementById("composer-model");
  const chip = document.getElementById("attachment-chip");

  // On a phone the chat list is a drawer over the page (see app.css).
  const layout = document.querySelector(".chat-layout");
  if (layout && layout.querySelector(".drawer-toggle")) chatsDrawer(layout);

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function where(p, withFile = true) {
    const parts = withFile ? [p.file_name] : [];
    if (p.page !== null && p.page !== undefined) parts.push(p.page_end && p.page_end !== p.page ? interpolate(gettext("pp. %(first)s–%(last)s"), { first: p.page, last: p.page_end }, true) : interpolate(gettext("p. %(page)s"), { page: p.page }, true));
    if (p.section) parts.push(p.section);
    return parts.join(", ");
  }

  // A lecture transcript's passage has its start time as its section ("12:34").
  function transcriptTime(p) {
    const last = String(p.section || "").split(" > ").pop();
    return /\.(vtt|srt)$/i.test(p.file_name || "") && /^\d+:\d{2}(:\d{2})?$/.test(last) ? last : "";
  }

  // The original behind a passage: its page with the passage marked, or the passage in its
  // section (a transcript: at its time). Opens in the side pane; a new tab with Ctrl/Cmd or the
  // pane's own link.
  function originalLink(p) {
    const position = String(p.chunk_id || "").split(":").pop();
    const href = p.page ? `/collections/files/${p.file_id}/pages/${p.page}/?passage=${position}` : `/collections/files/${p.file_id}/passages/${position}/`;
    const time = transcriptTime(p);
    let text = gettext("Show it in its section");
    if (p.page) text = interpolate(gettext("Open page %(page)s of the original"), { page: p.page }, true);
    else if (time) text = interpolate(gettext("Open the transcript at %(time)s"), { time }, true);
    // `from`: the chat's own address, for the original's "Back to the chat" (read at the click:
    // a new chat gets its address with its first answer).
    const fromHere = () => `${href}${href.includes("?") ? "&" : "?"}from=${encodeURIComponent(location.pathname)}`;
    const link = el("a", { class: "passage-link", href: fromHere(), target: "_blank", rel: "noopener", text, "data-testid": "open-original" });
    link.addEventListener("click", (event) => {
      link.href = fromHere();
      if (!sourcePane || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      openOriginal(link.href);
    });
    return link;
  }

  // The side pane beside the chat (full screen on a phone) showing a cited original. Its HTML is
  // rendered by our own template (escaped, the Markdown sanitised as answers are).
  const sourcePane = document.getElementById("source-pane");
  let paneOpener = null;
  async function openOriginal(href) {
    const body = sourcePane.querySelector(".source-pane-body");
    const newTab = sourcePane.querySelector(".source-pane-open");
    paneOpener = paneOpener || document.activeElement;
    newTab.href = href;
    body.replaceChildren(el("p", { class: "muted", text: gettext("Opening…") }));
    keepInPlace(paneOpener, () => {
      sourcePane.hidden = false;
      layout?.classList.add("pane-open");
    });
    try {
      const response = await fetch(href + (href.includes("?") ? "&" : "?") + "pane=1", { credentials: "same-origin" });
      if (!response.ok) {
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const sentence = page.querySelector("main p, .form-error, p")?.textContent || gettext("The original could not be opened.");
        body.replaceChildren(el("p", { class: "form-error", role: "alert", text: sentence }));
        return;
      }
      body.innerHTML = await response.text(); // our template's HTML (see above)
      body.scrollTop = 0;
      window.CurreChatOriginal?.enhance(body.querySelector(".original"), body);
      sourcePane.querySelector(".source-pane-close").focus({ preventScroll: true });
    } catch {
      body.replaceChildren(el("p", { class: "form-error", role: "alert", text: gettext("The original could not be opened. Check your connection and try again.") }));
    }
  }
  // Opening the pane narrows the chat's column, which makes the chat taller: the page scrolls so
  // that the link the reader followed stays where it was on the screen.
  function keepInPlace(anchor, change) {
    const before = anchor?.isConnected ? anchor.getBoundingClientRect().top : null;
    change();
    if (before !== null && anchor.isConnected) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
  }
  if (sourcePane) {
    sourcePane.addEventListener("click", (event) => {
      const link = event.target.closest("a[data-original-link]");
      if (link && !event.ctrlKey && !event.metaKey) {
        event.preventDefault();
        openOriginal(link.getAttribute("href"));
      }
    });
    const closePane = () => {
      keepInPlace(paneOpener, () => {
        sourcePane.hidden = true;
        layout?.classList.remove("pane-open");
      });
      paneOpener?.focus?.({ preventScroll: true });
      paneOpener = null;
    };
    sourcePane.querySelector(".source-pane-close").addEventListener("click", closePane);
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !sourcePane.hidden) closePane();
    });
  }

  // A passage's first words, to tell apart passages of the same page and section.
  function firstWords(p) {
    const words = String(p.text || "").replace(/[#*_`>|$\\[\]-]+/g, " ").split(/\s+/).filter(Boolean);
    return words.length ? `“${words.slice(0, 8).join(" ")}${words.length > 8 ? "…" : ""}”` : "";
  }

  function passageBody(p) {
    const body = el("div", { class: "passage-text markdown" });
    if (typeof p.html === "string") body.innerHTML = p.html; // sanitised on the server (see top of file)
    else body.textContent = p.text; // a reply stored before passages carried their HTML
    return body;
  }

  // One numbering: [n] is the passage's citation number in the turn, the same in every list.
  function passageDetails(p, id, withFile = true) {
    const details = el("details", id ? { id, class: "passage" } : { class: "passage" });
    const summary = el("summary", {}, el("span", { class: "passage-n", text: `[${p.n}] ` }), el("span", { class: "passage-where", text: where(p, withFile) }));
    const words = firstWords(p);
    if (words) summary.append(" ", el("span", { class: "passage-words muted", text: words }));
    details.append(summary, passageBody(p), originalLink(p));
    return details;
  }

  // The searches of one answer: collapsed, its summary saying what was searched and how much came back.
  function searchesBox() {
    const box = el("details", { class: "searches", "data-testid": "searches" });
    box.append(el("summary", { class: "searches-summary" }), el("ul", { class: "search-steps" }));
    return box;
  }

  function summarise(box) {
    const steps = [...box.querySelectorAll(".search")];
    const summary = box.querySelector(".searches-summary");
    summary.replaceChildren();
    const running = steps.filter((s) => !s.dataset.done);
    const queries = steps.map((s) => s.dataset.query).filter(Boolean);
    if (running.length) {
      const query = running[running.length - 1].dataset.query;
      summary.append(query ? gettext("Searching: ") : gettext("Searching"), query ? el("span", { class: "query", text: query }) : "", " ", el("span", { class: "spinner", "aria-hidden": "true" }));
      return;
    }
    const found = new Set();
    box.querySelectorAll(".search-steps details.passage").forEach((d) => found.add(d.dataset.n));
    const count = interpolate(ngettext("%(n)s passage", "%(n)s passages", found.size), { n: found.size }, true);
    // One search: the summary says its words and outcome, so its own line inside would repeat them.
    box.classList.toggle("single", steps.length === 1 && queries.length === 1);
    if (steps.length === 1 && queries.length === 1) {
      summary.append(gettext("Searched: "), el("span", { class: "query", text: queries[0] }), ` — ${found.size ? count : steps[0].dataset.outcome}`);
    } else {
      summary.append(interpolate(ngettext("Searched %(n)s time: ", "Searched %(n)s times: ", steps.length), { n: steps.length }, true), el("span", { class: "query", text: queries.join("; ") }), ` — ${count}`);
    }
  }

  // One search: "Searching: <query>" while it runs, then its results.
  function searchBlock(call) {
    const block = el("li", { class: "search", "data-call": call.call_id || call.id });
    block.dataset.query = call.query || "";
    const line = el("div", { class: "search-head" });
    if (call.query) line.append(gettext("Searching: "), el("span", { class: "query", text: call.query }));
    else line.append(el("span", { text: interpolate(gettext("The model made a malformed %(name)s call."), { name: call.name }, true) }));
    block.append(line);
    return block;
  }

  function fillSearch(block, result) {
    block.replaceChildren();
    block.dataset.done = "1";
    const head = el("div", { class: "search-head" });
    if (result.query) head.append(el("span", { class: "query", text: result.query }), " — ");
    if (result.status === "ok") block.dataset.outcome = interpolate(ngettext("%(n)s passage", "%(n)s passages", result.passages.length), { n: result.passages.length }, true);
    else if (result.status === "nothing_relevant") block.dataset.outcome = gettext("nothing relevant found");
    else block.dataset.outcome = result.error || gettext("the search failed");
    head.append(el("span", { class: result.status === "error" ? "error" : "", text: block.dataset.outcome }));
    block.append(head);
    if (result.passages && result.passages.length) {
      const list = el("ul", { class: "passages" });
      for (const p of result.passages) {
        const item = passageDetails(p);
        item.dataset.n = String(p.n);
        list.append(el("li", {}, item));
      }
      block.append(list);
    }
  }

  function citationsBlock(message) {
    if (!message.citations || !message.citations.length) return null;
    const box = el("div", { class: "citations" }, el("strong", { text: gettext("Sources") }));
    const groups = byDocument(message.citations);
    if (groups.length === 1) {
      for (const p of groups[0][1]) box.append(passageDetails(p, `cite-${message.id}-${p.n}`));
      return box;
    }
    // Several documents: each once, named, with its passages under it.
    for (const [name, passages] of groups) {
      const group = el("div", { class: "source-doc", role: "group", "aria-label": name, "data-testid": "source-doc" }, el("div", { class: "source-doc-name", text: name }));
      for (const p of passages) group.append(passageDetails(p, `cite-${message.id}-${p.n}`, false));
      box.append(group);
    }
    return box;
  }

  // An answer's sources by document: files in the order of their first citation, each file's
  // passages in reading order (page, then place in the file), as the model read them
  // (chat/turn/grounding.by_document).
  function byDocument(passages) {
    const groups = new Map();
    for (const p of passages) {
      const key = p.file_id ?? p.file_name;
      if (!groups.has(key)) groups.set(key, [p.file_name, []]);
      groups.get(key)[1].push(p);
    }
    const place = (p) => Number(String(p.chunk_id || "").split(":").pop()) || 0;
    const order = (a, b) => (a.page || 0) - (b.page || 0) || place(a) - place(b);
    return [...groups.values()].map(([name, list]) => [name, list.sort(order)]);
  }

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
        retry.addEventListener("click", () => send(withModel({ type: "retry" })));
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
      ask.addEventListener("click", () => send(withModel({ type: "regenerate" })));
      tools.append(ask);
    } else if (isLast && config.writable) {
      const again = el("button", { type: "button", class: "link", text: gettext("Regenerate"), "data-testid": "regenerate" });
      again.addEventListener("click", () => send(withModel({ type: "regenerate" })));
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

  function render() {
    conversation.replaceChildren();
    messages.forEach((m, i) => {
      if (m.role === "user") conversation.append(userBubble(m.content, m.attachment && m.attachment.name));
      else {
        const box = renderAssistant(m, i === messages.length - 1);
        if (i > 0 && messages[i - 1].role === "assistant") box.prepend(el("p", { class: "muted regenerated", "data-testid": "regenerated", text: gettext("Another answer to the same question:") }));
        conversation.append(box);
      }
    });
    conversation.lastElementChild?.scrollIntoView({ block: "end" });
  }

  function liveBubble(messageId) {
    if (live && live.id === messageId) return live;
    const placeholder = { id: messageId, status: "streaming", content: "", tool_calls: [], tool_results: [] };
    const box = renderAssistant(placeholder, true);
    const answer = box.querySelector(".answer");
    answer.textContent = "";
    conversation.append(box);
    live = { id: messageId, el: box, answer, searches: {}, box: box.querySelector(".searches") };
    return live;
  }

  function onEvent(event) {
    // Any other answer (its turn's first event, or a refusal that stored nothing) settles the request.
    if (!(event.type === "error" && event.signed_out)) unanswered = null;
    if (event.type === "token") {
      accepted();
      const bubble = liveBubble(event.message_id);
      bubble.answer.append(event.text); // a text node: streamed text is never parsed as HTML
    } else if (event.type === "retract") {
      // The leak guard stopped this answer: what it sent is replaced, and a new answer follows.
      liveBubble(event.message_id).answer.textContent = event.text;
    } else if (event.type === "tool_call") {
      accepted();
      const bubble = liveBubble(event.message_id);
      const block = searchBlock(event);
      bubble.searches[event.call_id] = block;
      bubble.box.querySelector(".search-steps").append(block);
      bubble.box.hidden = false;
      summarise(bubble.box);
    } else if (event.type === "tool_result") {
      const bubble = liveBubble(event.message_id);
      const block = bubble.searches[event.call_id];
      if (block) {
        fillSearch(block, event);
        summarise(bubble.box);
      }
    } else if (event.type === "message_done") {
      accepted();
      live = null;
      showMode(event.message);
      refresh();
      refreshUsage();
    } else if (event.type === "error") {
      onError(event);
      refreshUsage();
    }
  }

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

  function withModel(payload) {
    return modelSelect ? { ...payload, model: modelSelect.value } : payload;
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

  // The first question names the chat in the list on the side.
  function nameChat(text) {
    const current = document.querySelector(".session-list li.current a");
    if (current && current.textContent.trim() === gettext("New chat")) {
      current.textContent = text.length > 60 ? `${text.slice(0, 57)}…` : text;
    }
  }

  // How much of the longest allowed message is used. A longer message is never cut: it is refused
  // with its length, and Send stays off until it is short enough.
  function tooLong() {
    const counter = document.getElementById("char-count");
    const max = counter ? Number(counter.dataset.max) : Infinity;
    if (!input || input.value.length <= max) return "";
    return interpolate(gettext("Your message is %(length)s characters long; the most is %(most)s. Shorten it or split it into several questions."), { length: localFormats.number(input.value.length), most: localFormats.number(max) }, true);
  }

  function updateCounter() {
    const counter = document.getElementById("char-count");
    if (!counter || !input) return;
    const max = Number(counter.dataset.max);
    counter.textContent = `${localFormats.number(input.value.length)} / ${localFormats.number(max)}`;
    counter.classList.toggle("bad", input.value.length > max * 0.9);
    const refusal = tooLong();
    if (refusal || note.dataset.tooLong) note.textContent = refusal;
    note.dataset.tooLong = refusal ? "1" : "";
    const sendButton = document.getElementById("composer-send");
    if (sendButton && stopButton && stopButton.hidden) sendButton.disabled = Boolean(refusal) || usageLocked;
  }

  // The server took our message: show it as sent and clear the box.
  function accepted() {
    if (pendingText === null) return;
    messages.push({ role: "user", content: pendingText, attachment: pendingAttachment && { name: pendingAttachment } });
    nameChat(pendingText);
    conversation.append(userBubble(pendingText, pendingAttachment));
    if (live) conversation.append(live.el); // keep the answer below its question
    input.value = "";
    updateCounter(); // the counter starts again from 0
    pendingText = null;
    pendingAttachment = null;
    clearAttachment();
  }

  function onError(event) {
    if (event.signed_out) {
      // The socket closes next; the page tries again with the browser's cookie as it is now (connect).
      heldRefusal = event.detail;
      return;
    }
    if (event.message_id === null) {
      // Refused before it started (rate limit, too long, busy): nothing was stored; keep the text.
      pendingText = null;
      note.textContent = event.detail;
      setBusy(false);
      return;
    }
    accepted();
    live = null;
    refresh();
  }

  async function refresh() {
    if (!config.api_path) return;
    try {
      const response = await fetch(config.api_path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) return;
      messages = (await response.json()).messages;
    } catch {
      return; // offline: the reconnect will try again
    }
    live = null;
    render();
    const last = messages[messages.length - 1];
    const answering = last && last.role === "assistant" && (last.status === "pending" || last.status === "streaming");
    setBusy(answering);
    // An answer still being written elsewhere (we reconnected mid-turn): check again shortly.
    if (answering) setTimeout(refresh, 2000);
  }

  const stopButton = document.getElementById("composer-stop");

  function setBusy(busy) {
    if (!form) return;
    document.getElementById("composer-send").disabled = busy || usageLocked || Boolean(tooLong());
    // Stop is offered while an answer is being written (Escape does the same).
    stopButton.hidden = !busy;
    stopButton.disabled = false;
  }

  // An attached file goes through the API as multipart; its answer streams back as the same events
  // (text/event-stream) the websocket carries.
  async function sendWithAttachment(text, file) {
    note.textContent = "";
    setBusy(true);
    if (!(await ensureSession())) {
      pendingText = null;
      setBusy(false);
      return;
    }
    const body = new FormData();
    body.append("content", text);
    if (modelSelect) body.append("model", modelSelect.value);
    body.append("attachment", file);
    const csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;
    let response;
    try {
      response = await fetch(`${config.api_path}/messages`, {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { Accept: "text/event-stream", "X-CSRFToken": csrf },
      });
    } catch {
      onError({ message_id: null, detail: gettext("Not connected; try again.") });
      return;
    }
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      pendingAttachment = null;
      onError({ message_id: null, detail: problem.detail || gettext("The attachment could not be sent.") });
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split("\n").find((line) => line.startsWith("data: "));
        if (data) onEvent(JSON.parse(data.slice(6)));
      }
    }
  }

  function showAttachment() {
    const file = attachInput.files[0];
    chip.replaceChildren();
    chip.hidden = !file;
    if (!file) return;
    const remove = el("button", { type: "button", class: "link", text: gettext("Remove"), "aria-label": interpolate(gettext("Remove %(name)s"), { name: file.name }, true) });
    remove.addEventListener("click", clearAttachment);
    chip.append(el("span", { text: interpolate(gettext("Attached: %(name)s"), { name: file.name }, true) }), remove);
  }

  function clearAttachment() {
    if (!attachInput) return;
    attachInput.value = "";
    showAttachment();
  }

  function stop() {
    if (stopButton.hidden || stopButton.disabled) return;
    stopButton.disabled = true;
    if (socket && socket.readyState === WebSocket.OPEN) {
      lastSent = { type: "stop" };
      socket.send(JSON.stringify(lastSent));
    }
  }

  let queued = null; // a message sent while the socket was still connecting: sent once it opens
  let unanswered = null; // the last question (or retry, regenerate) sent, until the server answers it
  let lastSent = null; // the last message sent on the open socket
  let heldRefusal = null; // "You were signed out": shown only if the page cannot open a new socket

  // A chat is stored from its first message on: the blank chat page creates it when it is needed.
  async function ensureSession() {
    if (config.session_id) return true;
    const csrf = form.querySelector("[name=csrfmiddlewaretoken]").value;
    const response = await fetch(config.create.url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ prompt_id: config.create.prompt_id }),
    }).catch(() => null);
    if (!response || !response.ok) {
      const problem = response ? await response.json().catch(() => ({})) : {};
      note.textContent = problem.detail || gettext("Not connected; try again.");
      return false;
    }
    const chat = await response.json();
    config.session_id = chat.id;
    config.ws_path = `/ws/chats/${chat.id}/`;
    config.api_path = `/api/v1/chats/${chat.id}`;
    config.feedback = {}; // the student's own new chat: its answers can be rated
    history.replaceState(null, "", `${config.create.page}${chat.id}/`);
    const tools = document.getElementById("chat-tools");
    if (tools) {
      tools.querySelector("[data-href]").href = tools.querySelector("[data-href]").dataset.href.replace("{id}", chat.id);
      tools.querySelectorAll("[data-action-template]").forEach((f) => (f.action = f.dataset.actionTemplate.replace("{id}", chat.id)));
      tools.hidden = false;
    }
    const list = document.querySelector(".session-list");
    list.querySelector(".empty")?.remove();
    list.querySelector("li.current")?.classList.remove("current");
    list.prepend(el("li", { class: "current" }, el("a", { href: location.pathname, "aria-current": "page", text: gettext("New chat") })));
    connect();
    return true;
  }

  function send(payload) {
    if (!config.session_id) {
      ensureSession().then((ok) => {
        if (ok) send(payload);
        else {
          pendingText = null;
          setBusy(false);
        }
      });
      return true;
    }
    if (!socket || socket.readyState === WebSocket.CONNECTING) {
      queued = payload;
      note.textContent = gettext("Connecting…");
      setBusy(true);
      return true;
    }
    if (socket.readyState !== WebSocket.OPEN) {
      note.textContent = gettext("Not connected; reconnecting…");
      return false;
    }
    note.textContent = "";
    setBusy(true);
    socket.send(JSON.stringify(payload));
    lastSent = payload;
    if (payload.type !== "stop") unanswered = payload;
    return true;
  }

  // A new socket, opened after the server closed one whose browser session signs nobody in any more.
  // A refusal stores nothing, and the server refuses every later message of that socket too: so the
  // question was not stored if nothing was sent after it, and goes again; otherwise (a Stop followed
  // it) it may have been, and the stored conversation shows what happened.
  function resume() {
    const again = unanswered && lastSent === unanswered ? unanswered : null;
    heldRefusal = null;
    unanswered = null;
    lastSent = null;
    if (again) {
      send(again);
      return;
    }
    pendingText = null;
    refresh();
  }

  // The new socket was refused as well: this browser is signed out, as the refusal said.
  function signedOut() {
    if (heldRefusal) note.textContent = heldRefusal;
    heldRefusal = null;
    unanswered = null;
    pendingText = null;
    setBusy(false);
    connection.textContent = gettext("You may not open this chat any more.");
  }

  // `rejoining`: the server closed an open socket (4403) because its browser session signs nobody in
  // any more. This browser's own password change gives it a new session too, so the page tries once
  // with the cookie it holds now. A refused handshake reaches the page as a close before "open" (1006).
  function connect(rejoining = false) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const here = new WebSocket(`${scheme}://${location.host}${config.ws_path}`);
    let opened = false;
    socket = here;
    here.addEventListener("open", () => {
      opened = true;
      connection.textContent = "";
      if (rejoining) resume();
      if (queued) {
        const payload = queued;
        queued = null;
        send(payload);
      }
      if (retryDelay > 1000) refresh(); // catch up on anything that happened while we were away
      retryDelay = 1000;
    });
    here.addEventListener("message", (e) => onEvent(JSON.parse(e.data)));
    here.addEventListener("close", (e) => {
      if (e.code === 4403 && opened) {
        connect(true);
        return;
      }
      if (rejoining && !opened) {
        signedOut();
        return;
      }
      if (e.code === 4403) {
        connection.textContent = gettext("You may not open this chat any more.");
        return;
      }
      connection.textContent = gettext("Connection lost; reconnecting…");
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 15000);
    });
  }

  if (form) {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = input.value.trim();
      const file = attachInput && attachInput.files[0];
      if ((!text && !file) || pendingText !== null || usageLocked) return;
      if (tooLong()) {
        note.textContent = tooLong();
        return;
      }
      pendingText = text;
      // The starters are for an empty chat: a typed first question ends it as a click on one does.
      const starters = document.getElementById("examples");
      if (starters) starters.hidden = true;
      if (file) {
        pendingAttachment = file.name;
        sendWithAttachment(text, file);
      } else if (!send(withModel({ type: "user_message", content: text }))) pendingText = null;
    });
    attachInput?.addEventListener("change", showAttachment);
    stopButton.addEventListener("click", stop);
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") stop();
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
  }

  if (input) {
    input.addEventListener("input", updateCounter);
    updateCounter();
  }

  // Example questions: a click asks it; they are starters, shown only while the chat is empty.
  const examples = document.getElementById("examples");
  if (examples) {
    examples.hidden = messages.length > 0;
    examples.addEventListener("click", (e) => {
      const button = e.target.closest("button.example");
      if (!button || !form) return;
      input.value = button.dataset.question;
      examples.hidden = true;
      form.requestSubmit();
    });
  }

  // Citation links open their passage.
  conversation.addEventListener("click", (e) => {
    const link = e.target.closest("a.cite");
    if (!link) return;
    const target = document.querySelector(link.getAttribute("href"));
    if (!target) return;
    e.preventDefault();
    target.open = true;
    target.classList.add("flash");
    target.scrollIntoView({ block: "nearest" });
    setTimeout(() => target.classList.remove("flash"), 1500);
  });

  render();
  if (config.usage && config.writable) applyUsage(config.usage);
  const last = messages[messages.length - 1];
  if (last && last.role === "assistant" && (last.status === "pending" || last.status === "streaming")) refresh();
  // Events go to the socket that asked; a reader (the teacher) follows an answer by polling instead.
  if (config.writable && config.session_id) connect();
})();

// The chat list on a phone: a modal dialog over the page. Opening moves focus into it and makes the
// rest of the page inert (so Tab stays inside); Escape, its Close button or a tap beside it closes
// it and gives focus back to the button that opened it. On a wide screen it is the left column.
function chatsDrawer(layout) {
  const toggle = layout.querySelector(".drawer-toggle");
  const drawer = document.getElementById("chat-sessions");
  const phone = window.matchMedia("(max-width: 800px)");
  const backdrop = document.createElement("div");
  backdrop.className = "drawer-backdrop";
  layout.append(backdrop);
  layout.classList.add("js-drawer");
  let inerted = [];

  function outside() {
    // Everything but the drawer: its siblings at each level up to <body>.
    const found = [];
    for (let node = drawer; node && node !== document.body; node = node.parentElement) {
      for (const sibling of node.parentElement.children) {
        if (sibling !== node && sibling !== backdrop && !sibling.inert && sibling.tagName !== "SCRIPT") found.push(sibling);
      }
    }
    return found;
  }
  function open() {
    layout.classList.add("drawer-open");
    toggle.setAttribute("aria-expanded", "true");
    drawer.setAttribute("role", "dialog");
    drawer.setAttribute("aria-modal", "true");
    inerted = outside();
    for (const node of inerted) node.inert = true;
    drawer.querySelector("a[aria-current], a, input")?.focus();
  }
  function close({ refocus = true } = {}) {
    if (!layout.classList.contains("drawer-open")) return;
    layout.classList.remove("drawer-open");
    toggle.setAttribute("aria-expanded", "false");
    drawer.removeAttribute("role");
    drawer.removeAttribute("aria-modal");
    for (const node of inerted) node.inert = false;
    inerted = [];
    if (refocus) toggle.focus();
  }
  toggle.addEventListener("click", open);
  drawer.querySelector(".drawer-close")?.addEventListener("click", () => close());
  backdrop.addEventListener("click", () => close());
  document.addEventListener("keydown", (event) => {
    if (!layout.classList.contains("drawer-open")) return;
    if (event.key === "Escape") close();
    if (event.key !== "Tab") return;
    // From the last control Tab goes round to the first (and back with Shift), not out of the page.
    const controls = [...drawer.querySelectorAll("a[href], button, input, select, textarea")].filter(
      (node) => !node.disabled && node.offsetParent !== null,
    );
    const [first, last] = [controls[0], controls[controls.length - 1]];
    if (event.shiftKey ? document.activeElement === first : document.activeElement === last) {
      event.preventDefault();
      (event.shiftKey ? last : first)?.focus();
    }
  });
  phone.addEventListener("change", () => close({ refocus: false }));  // a wide screen shows it as a column
}

