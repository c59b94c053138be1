// gettext() and interpolate() come from the JavaScript catalogue (base.html loads it before the page scripts).
// The co-teacher picker (accounts/picker.py): the "Add by username or email address" box becomes a
// combobox that asks GET /api/v1/teachers for a few teachers as one types (3 characters at least).
// Choosing one adds a ticked box to the list above it, as if the name had been typed; the form is
// saved as without JavaScript. The server decides who may be added, when the form is saved.
document.querySelectorAll("[data-teacher-picker]").forEach((picker) => {
  const input = picker.querySelector("[data-picker-input]");
  if (!input) return; // not the owner: the list is shown, nothing to pick
  const options = picker.querySelector("[role=listbox]");
  const status = picker.querySelector("[data-picker-status]");
  const picked = picker.querySelector("[data-picked]");
  const none = picker.querySelector("[data-none]");
  const name = picker.dataset.name;
  const lookup = picker.dataset.lookup;
  const MIN = 3;
  let found = [];
  let active = -1;
  let timer = null;
  let asked = 0;

  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-expanded", "false");
  input.setAttribute("aria-controls", options.id);

  // Several names may be typed, separated by commas: the picker looks up the last one.
  const parts = () => input.value.split(",");
  const typed = () => parts()[parts().length - 1].trim();
  const label = (teacher) => teacher.label || teacher.username;
  const say = (text) => (status.textContent = text);

  function close() {
    options.hidden = true;
    options.replaceChildren();
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  }

  function highlight(index) {
    active = index;
    [...options.children].forEach((option, i) => option.setAttribute("aria-selected", String(i === index)));
    if (index >= 0) input.setAttribute("aria-activedescendant", options.children[index].id);
    else input.removeAttribute("aria-activedescendant");
  }

  function show(teachers, text) {
    found = teachers;
    close();
    if (!teachers.length) {
      const address = text.includes("@");
      // A new prompt or collection has no invitation section yet: saving offers the invitation instead.
      const invite = document.getElementById("invite-email");
      const unknown = invite
        ? gettext("No teacher has the address “%s”. If they have no account yet, invite them below.")
        : gettext("No teacher has the address “%s”. When you save, you are offered to invite them to co-teach.");
      say(
        address
          ? interpolate(unknown, [text])
          : interpolate(gettext("No teacher's username or address begins with “%s”."), [text]),
      );
      if (address && invite && !invite.value) invite.value = text;
      return;
    }
    teachers.forEach((teacher, i) => {
      const option = document.createElement("li");
      option.id = `${options.id}-${i}`;
      option.setAttribute("role", "option");
      option.setAttribute("aria-selected", "false");
      option.textContent = label(teacher);
      if (teacher.email) option.append(` · ${teacher.email}`);
      option.addEventListener("mousedown", (event) => event.preventDefault()); // keep the focus in the box
      option.addEventListener("click", () => choose(i));
      options.append(option);
    });
    options.hidden = false;
    input.setAttribute("aria-expanded", "true");
    const sentence = ngettext(
      "%s teacher found. Choose with the arrow keys and Enter.",
      "%s teachers found. Choose with the arrow keys and Enter.",
      teachers.length,
    );
    say(interpolate(sentence, [teachers.length]));
  }

  async function ask() {
    const text = typed();
    if (text.length < MIN) {
      close();
      say(text ? interpolate(gettext("Type at least %s characters."), [MIN]) : "");
      return;
    }
    const mine = ++asked;
    let response;
    let body = {};
    try {
      response = await fetch(`${lookup}?q=${encodeURIComponent(text)}`, { headers: { Accept: "application/json" } });
      body = await response.json();
    } catch {
      if (mine === asked) say(gettext("Looking up teachers failed. Type the username or address in full and save."));
      return;
    }
    if (mine !== asked) return; // an answer to an earlier keystroke
    if (!response.ok) {
      close();
      say(body.detail || gettext("Looking up teachers failed. Type the username or address in full and save."));
      return;
    }
    show(body, text);
  }

  function choose(index) {
    const teacher = found[index];
    let box = [...picked.querySelectorAll("input[type=checkbox]")].find((b) => b.value === teacher.username);
    if (!box) {
      const item = document.createElement("li");
      const wrap = document.createElement("label");
      wrap.className = "check";
      box = document.createElement("input");
      box.type = "checkbox";
      box.name = name;
      box.value = teacher.username;
      wrap.append(box, ` ${label(teacher)}`);
      item.append(wrap);
      picked.append(item);
    }
    box.checked = true;
    picked.hidden = false;
    if (none) none.hidden = true;
    const rest = parts().slice(0, -1).map((part) => part.trim()).filter(Boolean);
    input.value = rest.length ? `${rest.join(", ")}, ` : "";
    close();
    say(interpolate(gettext("%s added. Save to make it so."), [label(teacher)]));
    input.focus();
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(ask, 250); // one look-up per pause in typing, not per key
  });
  input.addEventListener("keydown", (event) => {
    if (options.hidden) return;
    const count = options.children.length;
    if (event.key === "ArrowDown") {
      event.preventDefault();
      highlight((active + 1) % count);
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      highlight((active - 1 + count) % count);
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault(); // choosing, not saving the form
      choose(active);
    } else if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  });
  input.addEventListener("blur", close);
});
