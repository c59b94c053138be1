// Collection page: upload (several files, drag and drop), live progress over the websocket,
// cancel / retry / delete through the REST API. Without this script the page's forms still work.
// gettext(), ngettext() and interpolate() come from the JavaScript catalogue (base.html loads it first).
(() => {
  "use strict";
  const section = document.getElementById("files");
  if (!section) return;

  const table = document.getElementById("file-table");
  const tbody = table.querySelector("tbody");
  const log = document.getElementById("upload-log");
  const liveState = document.getElementById("live-state");
  const form = document.getElementById("upload-form");
  const input = document.getElementById("upload-input");
  const dropzone = document.getElementById("dropzone");
  const filesApi = section.dataset.filesApi;
  const fileUrl = (id) => section.dataset.fileUrl.replace(/0\/$/, `${id}/`);
  const LABELS = {
    queued: gettext("Queued"),
    processing: gettext("Processing"),
    ready: gettext("Ready"),
    failed: gettext("Failed"),
    cancelled: gettext("Cancelled"),
  };
  // Every FileType (collections_app/models.py), named as the page names it on first load.
  const TYPES = {
    text: gettext("Text"), markdown: "Markdown", html: "HTML", pdf: "PDF", pptx: "PowerPoint", docx: "Word",
    transcript: gettext("Transcript"), image: gettext("Image"),
  };
  const ACTIVE = new Set(["queued", "processing"]);

  function csrfToken() {
    const match = document.cookie.match(/(?:^|; )csrftoken=([^;]*)/);
    if (match) return decodeURIComponent(match[1]);
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  async function api(method, url, body) {
    const response = await fetch(url, {
      method,
      body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
    });
    if (response.status === 204) return null;
    const answered = interpolate(gettext("The server answered %(status)s."), { status: response.status }, true);
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = { detail: answered };
    }
    if (!response.ok) throw new Error(data.detail || answered);
    return data;
  }

  function say(text, bad = false) {
    const item = document.createElement("li");
    item.textContent = text;
    if (bad) item.className = "bad";
    log.prepend(item);
    return item;
  }

  function el(tag, attrs = {}, text = "") {
    const node = document.createElement(tag);
    Object.entries(attrs).forEach(([key, value]) => node.setAttribute(key, value));
    if (text) node.textContent = text;
    return node;
  }

  function actionButton(action, label, file) {
    const button = el("button", { type: "button", class: action === "delete" ? "small danger" : "small" }, label);
    button.addEventListener("click", () => runAction(action, file.id, file.name));
    return button;
  }

  // One row per file, built from the API's file shape (also used for websocket events).
  function renderRow(file) {
    let row = tbody.querySelector(`tr[data-file-id="${file.id}"]`);
    const fresh = !row;
    if (fresh) row = el("tr", { "data-file-id": file.id });
    row.dataset.status = file.status;
    row.replaceChildren();
    const name = el("td", { "data-label": gettext("File") });
    name.append(el("a", { href: fileUrl(file.id) }, file.name));
    if (file.pages) name.append(el("span", { class: "muted" }, ` · ${interpolate(ngettext("%(count)s page", "%(count)s pages", file.pages), { count: localFormats.number(file.pages) }, true)}`));
    const state = el("td", { class: "file-state", "data-label": gettext("Status") });
    state.append(el("span", { class: `file-status status-${file.status}` }, LABELS[file.status] || file.status));
    const flagged = file.flagged_pages || [];
    if (file.status === "ready" && flagged.length) {
      const count = interpolate(ngettext("%(n)s page needs checking", "%(n)s pages need checking", flagged.length), { n: localFormats.number(flagged.length) }, true);
      state.append(" ", el("a", { class: "file-flags", href: `${fileUrl(file.id)}#page-${flagged[0].page}`, "data-testid": "pages-to-check" }, `· ${count}`));
    }
    if (file.quality_warning) {
      state.append(" ", el("a", { class: "file-quality", href: `${fileUrl(file.id)}#unreadable`, "data-testid": "quality-warning" }, `— ${file.quality_warning}`));
    }
    if (ACTIVE.has(file.status)) {
      // While a step counts (pages read, passages embedded), the bar shows that very count, as the text does.
      const counted = file.progress_total > 0;
      const max = counted ? file.progress_total : 100;
      const value = counted ? file.progress_done : file.progress;
      const bar = el("progress", { max: String(max), "aria-label": interpolate(gettext("Progress of %(name)s"), { name: file.name }, true) }, counted ? `${localFormats.number(value)} / ${localFormats.number(max)}` : localFormats.percent(value / 100));
      bar.value = value;
      state.append(bar);
    }
    const detail = file.status === "failed" ? file.error : (file.status === "queued" && file.waiting) || file.progress_detail;
    state.append(el("small", { class: "file-detail" }, detail || (file.status === "queued" ? gettext("Waiting for a worker") : "")));
    if (file.notes) state.append(el("small", { class: "file-notes" }, file.notes));
    const actions = el("td", { class: "file-actions" });
    if (ACTIVE.has(file.status)) actions.append(actionButton("cancel", gettext("Cancel"), file));
    if (file.status === "failed" || file.status === "cancelled") actions.append(actionButton("retry", gettext("Retry"), file));
    actions.append(actionButton("delete", gettext("Delete"), file));
    if (file.file_type) row.dataset.type = TYPES[file.file_type] || file.file_type;
    const type = el("td", { "data-label": gettext("Type") }, row.dataset.type || "");
    row.append(name, type, state, el("td", { class: "file-chunks", "data-label": gettext("Passages") }, localFormats.number(file.chunk_count)), actions);
    if (fresh) tbody.prepend(row);
    logLine(file);
    table.hidden = false;
    const empty = document.getElementById("no-files");
    if (empty) empty.remove();
  }

  function removeRow(id) {
    const row = tbody.querySelector(`tr[data-file-id="${id}"]`);
    if (row) row.remove();
  }

  async function runAction(action, id, name) {
    if (action === "delete" && !window.confirm(interpolate(gettext("Delete “%(name)s” and its passages?"), { name }, true))) return;
    try {
      if (action === "delete") {
        await api("DELETE", `/api/v1/files/${id}`);
        removeRow(id);
      } else {
        renderRow(await api("POST", `/api/v1/files/${id}/${action}`));
      }
    } catch (error) {
      say(error.message, true);
    }
  }

  // The upload log's line of each file uploaded from this page, kept true as the file moves on: its
  // place and estimate while it waits, then that it is read, ready or failed (never a stale estimate).
  const uploadLines = new Map();
  function logLine(file) {
    const entry = uploadLines.get(String(file.id));
    if (!entry) return;
    const now = {
      queued: file.waiting || "",
      processing: gettext("Being read now."),
      ready: gettext("Ready to search."),
      failed: file.error || gettext("It could not be read."),
      cancelled: gettext("Cancelled."),
    };
    const uploaded = interpolate(gettext("“%(name)s” uploaded."), { name: entry.name }, true);
    entry.line.textContent = `${uploaded} ${now[file.status] ?? ""}`.trim();
    entry.line.className = file.status === "failed" ? "bad" : "";
    entry.line.dataset.status = file.status;
    if (!ACTIVE.has(file.status)) uploadLines.delete(String(file.id));
  }

  async function upload(fileList) {
    const mode = document.getElementById("pdf-mode").value;
    for (const file of Array.from(fileList)) {
      const line = say(interpolate(gettext("Uploading “%(name)s”…"), { name: file.name }, true));
      const body = new FormData();
      body.append("file", file);
      body.append("pdf_mode", mode);
      try {
        const added = await api("POST", filesApi, body);
        uploadLines.set(String(added.id), { line, name: file.name });
        renderRow(added);
      } catch (error) {
        line.textContent = error.message;
        line.className = "bad";
      }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!input.files.length) {
      say(gettext("Choose one or more files to upload."), true);
      return;
    }
    upload(input.files).then(() => (input.value = ""));
  });
  ["dragenter", "dragover"].forEach((type) =>
    dropzone.addEventListener(type, (event) => {
      event.preventDefault();
      dropzone.classList.add("dragging");
    }),
  );
  ["dragleave", "drop"].forEach((type) =>
    dropzone.addEventListener(type, (event) => {
      event.preventDefault();
      dropzone.classList.remove("dragging");
    }),
  );
  dropzone.addEventListener("drop", (event) => upload(event.dataTransfer.files));

  // Server-rendered buttons become API calls (their forms stay as the no-script fallback).
  tbody.querySelectorAll("form[data-action]").forEach((actionForm) => {
    actionForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const row = actionForm.closest("tr");
      runAction(actionForm.dataset.action, row.dataset.fileId, row.querySelector("a").textContent);
    });
  });

  async function resync() {
    try {
      // The files this page lists (its filter, order and page), as the server chose them.
      const files = await api("GET", `${filesApi}?${section.dataset.listQuery || ""}`);
      const known = new Set(files.map((f) => String(f.id)));
      tbody.querySelectorAll("tr[data-file-id]").forEach((row) => known.has(row.dataset.fileId) || row.remove());
      files.reverse().forEach(renderRow);
    } catch (error) {
      liveState.textContent = error.message;
    }
  }

  // One resync at a time however many files leave the queue at once (a batch of short files).
  let resyncing = null;
  function resyncSoon() {
    if (!resyncing) resyncing = resync().finally(() => (resyncing = null));
  }

  // Live progress: the websocket pushes events; while it is down the page polls, so bars never freeze.
  let retryDelay = 1000;
  let pollTimer = null;

  function startPolling() {
    if (!pollTimer) pollTimer = setInterval(resync, 4000);
  }
  function stopPolling() {
    clearInterval(pollTimer);
    pollTimer = null;
  }

  // `rejoining`: the server closed an open socket (4403): its browser session signs nobody in any more,
  // or the user may no longer edit the collection. This browser's own password change gives it a new
  // session, so the page tries once with the cookie it holds now; a refused handshake reaches the page
  // as a close before "open" (1006).
  function connect(rejoining = false) {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const here = new WebSocket(`${scheme}://${window.location.host}${section.dataset.wsPath}`);
    let opened = false;
    here.addEventListener("open", () => {
      opened = true;
      retryDelay = 1000;
      liveState.textContent = "";
      stopPolling();
      resync(); // catch up on what happened while disconnected
    });
    here.addEventListener("message", (event) => {
      const data = JSON.parse(event.data);
      if (data.type !== "file_progress") return;
      if (data.status === "deleted") {
        removeRow(data.file_id);
        return;
      }
      const row = tbody.querySelector(`tr[data-file-id="${data.file_id}"]`);
      const leftQueue = row && row.dataset.status === "queued" && data.status !== "queued";
      renderRow({ ...data, id: data.file_id, progress_detail: data.detail, progress_done: data.done, progress_total: data.total });
      // A file leaving the queue moves every other queued file up: fetch their new places.
      if (leftQueue && tbody.querySelector('tr[data-status="queued"]')) resyncSoon();
    });
    here.addEventListener("close", (event) => {
      if (event.code === 4403 && opened) {
        connect(true);
        return;
      }
      if (event.code === 4403 || (rejoining && !opened)) {
        liveState.textContent = gettext("Live progress is not available for this collection.");
        return;
      }
      liveState.textContent = gettext("Live progress lost; reconnecting…");
      startPolling();
      setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 15000);
    });
  }
  connect();
  // A safety net for events lost between two processes: refresh active files now and then.
  setInterval(() => {
    if (tbody.querySelector('tr[data-status="queued"], tr[data-status="processing"]')) resync();
  }, 30000);
})();
