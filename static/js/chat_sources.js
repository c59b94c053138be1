// The sources of an answer on the chat page: the searches it ran and the passages each found, its
// cited passages grouped by document, and the side pane that shows a passage's original. Loaded
// before chat_messages.js and chat.js, which draw answers with these (window.CurreChatSources).
// `el` lives here, in the first of the chat page's own scripts, and every one of them builds with it.
//
// Safety: the only HTML inserted is a passage's `html`, which the server built from Markdown and
// sanitised with an allowlist (chat/rendering.py), and the original shown in the pane, which our
// own template rendered. Everything else — search queries, passages, file names — goes in as text
// nodes.
(() => {
  "use strict";
  const layout = document.querySelector(".chat-layout"); // `pane-open` on it makes room for the pane

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
  // chat.js calls this where it sets up the page: after the phone's drawer and before the composer,
  // so that Escape reaches the drawer, the pane and Stop in that order.
  function listenToPane() {
    if (!sourcePane) return;
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

  window.CurreChatSources = { el, listenToPane, searchesBox, summarise, searchBlock, fillSearch, citationsBlock };
})();
