// A "select all" checkbox for a list of checkboxes of one name (data-select-all="NAME"):
// ticking it ticks every box on the page, and it shows "some ticked" as indeterminate.
// It is a native checkbox, so Space toggles it and screen readers announce "mixed". It
// stays hidden without JavaScript, where it could do nothing.
(function () {
  "use strict";

  function boxes(master) {
    var form = master.form || document;
    return Array.prototype.slice.call(
      form.querySelectorAll('input[type=checkbox][name="' + master.dataset.selectAll + '"]')
    );
  }

  function refresh(master) {
    var all = boxes(master);
    var ticked = all.filter(function (box) {
      return box.checked;
    }).length;
    master.checked = all.length > 0 && ticked === all.length;
    master.indeterminate = ticked > 0 && ticked < all.length;
    var count = document.getElementById("selected-count");
    if (count) {
      // The sentence comes from the page, in its language: "{ticked} of {total} ticked".
      var sentence = count.dataset.sentence || "{ticked} of {total} ticked";
      count.textContent = ticked
        ? sentence.replace("{ticked}", ticked).replace("{total}", all.length)
        : "";
    }
  }

  function masters() {
    return Array.prototype.slice.call(document.querySelectorAll("input[data-select-all]"));
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (!target || target.type !== "checkbox") {
      return;
    }
    if (target.dataset.selectAll) {
      boxes(target).forEach(function (box) {
        box.checked = target.checked;
      });
      refresh(target);
      return;
    }
    masters().forEach(function (master) {
      if (master.dataset.selectAll === target.name) {
        refresh(master);
      }
    });
  });

  function setUp() {
    masters().forEach(function (master) {
      master.hidden = false;
      var fallback = master.parentElement.querySelector("[data-select-all-fallback]");
      if (fallback) {
        fallback.remove();
      }
      refresh(master);
    });
  }
  document.addEventListener("DOMContentLoaded", setUp);
  document.addEventListener("htmx:load", setUp);
})();
