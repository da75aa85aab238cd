// Sections shown only for some values of another field (a workload's training settings,
// a pool's cloud price, the calculator's mode): an element with data-show-when="<id of
// the controlling field>" and data-show-values="<space-separated values>" is hidden
// otherwise. Hidden inputs stay in the form, so switching back keeps what was typed; they
// stop being required, as the server does not ask for them either
// (apps/core/forms.py, SectionedFormMixin).
(function () {
  "use strict";
  function update(root) {
    (root || document).querySelectorAll("[data-show-when]").forEach(function (section) {
      var controller = document.getElementById(section.dataset.showWhen);
      if (!controller) {
        return;
      }
      var shown = section.dataset.showValues.split(" ").indexOf(controller.value) !== -1;
      section.hidden = !shown;
      section.querySelectorAll("input, select, textarea").forEach(function (input) {
        if (!shown && input.required) {
          input.required = false;
          input.dataset.requiredWhenShown = "true";
        } else if (shown && input.dataset.requiredWhenShown) {
          input.required = true;
        }
      });
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target && event.target.id && document.querySelector(
      '[data-show-when="' + event.target.id + '"]'
    )) {
      update();
    }
  });
  document.addEventListener("DOMContentLoaded", function () { update(); });
  document.addEventListener("htmx:load", function () { update(); });
  update();
})();
