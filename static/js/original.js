// A cited page or section (collections/_original.html), on its own page or in the chat's side pane:
// marks the quoted passage's words in the rendered text and scrolls to it, scrolls to the marks
// drawn on a page image, and zooms the image. The chat page calls CurreChatOriginal.enhance on
// each page it loads into its pane.
(() => {
  "use strict";
  const WORD = /[\p{L}\p{N}]+/gu;

  function norm(word) {
    return word.normalize("NFKC").toLowerCase();
  }

  // The text nodes' words in reading order, each with its node and offsets (math is left out,
  // as the server leaves LaTeX out of the passage's words).
  function wordsIn(container) {
    const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => (node.parentElement.closest("math, annotation") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const found = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(WORD)) found.push({ w: norm(match[0]), node, start: match.index, end: match.index + match[0].length });
    }
    return found;
  }

  function findRun(seq, run, from) {
    outer: for (let i = from; i + run.length <= seq.length; i++) {
      for (let k = 0; k < run.length; k++) if (seq[i + k] !== run[k]) continue outer;
      return i;
    }
    return -1;
  }

  // Where a run of the passage's words occurs on the page: every occurrence of the first run (of
  // `size` words from the passage's start, or from its end) that the page has, moving inwards past
  // words the page renders differently (a formula).
  function occurrences(seq, words, size, fromEnd) {
    for (let skip = 0; skip + size <= words.length && skip < 40; skip++) {
      const run = fromEnd ? words.slice(words.length - skip - size, words.length - skip) : words.slice(skip, skip + size);
      const found = [];
      for (let at = findRun(seq, run, 0); at >= 0; at = findRun(seq, run, at + 1)) found.push(fromEnd ? at + size - 1 : at);
      if (found.length) return found;
    }
    return [];
  }

  // The first and last of the page's words that belong to the passage. A section may repeat the
  // passage's opening words ("Write a program that …" twice): the start is the one whose end
  // follows within the passage's reach, and the end the last within that reach, so a passage is
  // marked whole, across paragraphs, quotes, lists, tables and code, and not at an earlier repeat.
  function span(seq, words) {
    const size = Math.min(4, words.length);
    const starts = occurrences(seq, words, size, false);
    if (!starts.length) return null;
    const ends = occurrences(seq, words, size, true);
    for (const first of starts) {
      const reach = ends.filter((at) => at >= first && at <= first + words.length * 2);
      if (reach.length) return [first, reach[reach.length - 1]];
    }
    return [starts[0], Math.min(seq.length - 1, starts[0] + words.length - 1)];
  }

  function markText(root) {
    const container = root.querySelector(".original-text");
    const words = (root.dataset.words || "").split(" ").filter(Boolean);
    if (!container || !words.length) return null;
    const found = wordsIn(container);
    const range = span(found.map((t) => t.w), words);
    if (!range) return null;
    const [first, last] = range;
    // One <mark> per text node in the passage (marks cannot cross element boundaries), last first
    // so the offsets of the nodes not yet wrapped stay right.
    const pieces = new Map();
    for (let i = first; i <= last; i++) {
      const t = found[i];
      const piece = pieces.get(t.node) || { start: t.start, end: t.end };
      piece.end = t.end;
      pieces.set(t.node, piece);
    }
    const marks = [];
    for (const [node, piece] of [...pieces.entries()].reverse()) {
      const range = document.createRange();
      range.setStart(node, piece.start);
      range.setEnd(node, piece.end);
      const mark = document.createElement("mark");
      mark.className = "cited";
      range.surroundContents(mark);
      marks.unshift(mark);
    }
    return marks[0] || null;
  }

  // In the chat's side pane only the pane's own box scrolls (`scroller`): scrollIntoView would
  // scroll the chat's page too, away from where the reader was.
  function scrollTo(target, scroller) {
    if (!target) return;
    if (!scroller) {
      target.scrollIntoView({ block: "center" });
      return;
    }
    const box = target.getBoundingClientRect();
    const frame = scroller.getBoundingClientRect();
    scroller.scrollTop += box.top - frame.top - (scroller.clientHeight - box.height) / 2;
  }

  function enhance(root, scroller) {
    if (!root || root.dataset.enhanced) return;
    root.dataset.enhanced = "1";
    const firstMark = markText(root);
    const image = root.querySelector(".page-figure img");
    const box = root.querySelector(".page-marks rect");
    if (box && image) {
      // The marks are drawn over the image: scroll once it has its size.
      if (image.complete) scrollTo(box, scroller);
      else image.addEventListener("load", () => scrollTo(box, scroller), { once: true });
    } else {
      scrollTo(firstMark, scroller);
    }
    const zoom = root.querySelector("button.zoom");
    const frame = root.querySelector(".page-frame");
    if (zoom && frame) {
      zoom.addEventListener("click", () => {
        const on = frame.classList.toggle("zoomed");
        zoom.setAttribute("aria-pressed", String(on));
        scrollTo(box, scroller);
      });
    }
  }

  window.CurreChatOriginal = { enhance };
  document.querySelectorAll(".original").forEach(enhance);
})();
