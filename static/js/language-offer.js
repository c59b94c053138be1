// Collection form (new collection and settings): when the chosen language is one the model for
// search by meaning does not know, choose the model the server has that knows it, and say so next
// to the language, before anything is saved. The server holds the form to the same rule
// (collections_app/writes.py model_for_language); without this script it refuses with a sentence
// naming the model. The data comes from the form (collections_app/forms.py language_offers).
// gettext() and interpolate() come from the JavaScript catalogue (base.html loads it first).
(() => {
  "use strict";
  const data = document.getElementById("language-offers");
  const language = document.getElementById("id_language");
  const model = document.getElementById("id_embedding_model");
  if (!data || !language || !model) return;
  const { knows, suggest } = JSON.parse(data.textContent);

  const note = document.createElement("p");
  note.className = "hint";
  note.id = "language-offer";
  note.dataset.testid = "language-offer";
  note.setAttribute("role", "status"); // read out when it changes, without moving the focus
  language.closest(".field").append(note);
  const describedBy = (language.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
  language.setAttribute("aria-describedby", [...describedBy, note.id].join(" "));

  const fits = (name, code) => {
    const known = knows[name];
    return known === null || known === undefined || known.includes(code);
  };
  const languageName = () => language.options[language.selectedIndex].text;

  function offer(changed) {
    const code = language.value;
    const values = { language: languageName() };
    if (fits(model.value, code)) {
      note.textContent = "";
      return;
    }
    const better = suggest[code];
    if (better && changed === "language" && [...model.options].some((o) => o.value === better)) {
      model.value = better;
      note.textContent = interpolate(
        gettext(
          "%(language)s: the model for search by meaning was changed to one that knows it, so that questions find passages by what they mean (see Details).",
        ),
        values,
        true,
      );
    } else if (better) {
      note.textContent = interpolate(
        gettext("The chosen model for search by meaning does not know %(language)s: choose one that knows every language."),
        values,
        true,
      );
    } else {
      note.textContent = interpolate(
        gettext(
          "The model for search by meaning knows English only, and the model server has none that knows %(language)s: search will rely mostly on matching words. Your administrator can add one.",
        ),
        values,
        true,
      );
    }
  }

  language.addEventListener("change", () => offer("language"));
  model.addEventListener("change", () => offer("model"));
  offer("page"); // a stored pair that does not fit is pointed out, not changed behind the teacher's back
})();
