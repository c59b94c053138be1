// The chat page: renders the conversation, streams answers over /ws/chats/{id}/, reconnects.
// Loaded last of the chat page's scripts, which it builds on: chat_sources.js (an answer's searches
// and passages, the side pane), chat_messages.js (how a message is drawn and rated), chat_status.js
// (the allowance and model-status lines) and chat_drawer.js (the chat list on a phone).
//
// Safety: this file inserts no HTML: the student's text, streamed tokens and refusals go in as text
// nodes. The HTML the page inserts (answers, passages, the pane's original) is inserted only in
// chat_messages.js and chat_sources.js, which say why each is safe.
(() => {
  "use strict";
  const { el, listenToPane, summarise, searchBlock, fillSearch } = window.CurreChatSources;
  const { chatsDrawer } = window.CurreChatDrawer;
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
  const stopButton = document.getElementById("composer-stop");
  // The other scripts get the state they need from here: the one `config` (read as they use it, so
  // a new chat's `feedback` reaches them), the composer's controls, and Retry/Regenerate sent as any
  // message is (on this socket, with the chosen model).
  const { renderAssistant, userBubble } = window.CurreChatMessages.messageViews(config, (payload) => send(withModel(payload)));
  const { applyUsage, refreshUsage, usageLocked, showMode } = window.CurreChatStatus.statusLines(config, { note, form, stopButton });

  // On a phone the chat list is a drawer over the page (see app.css).
  const layout = document.querySelector(".chat-layout");
  if (layout && layout.querySelector(".drawer-toggle")) chatsDrawer(layout);
  listenToPane(); // after the drawer's listeners, so Escape's handlers keep their order

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

  function withModel(payload) {
    return modelSelect ? { ...payload, model: modelSelect.value } : payload;
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
    if (sendButton && stopButton && stopButton.hidden) sendButton.disabled = Boolean(refusal) || usageLocked();
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

  function setBusy(busy) {
    if (!form) return;
    document.getElementById("composer-send").disabled = busy || usageLocked() || Boolean(tooLong());
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
      if ((!text && !file) || pendingText !== null || usageLocked()) return;
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
