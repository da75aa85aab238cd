// The calculator shows the settings of the chosen mode only (both stay in the form, so
// switching back keeps what was typed).
(function () {
  "use strict";
  function showModeGroups() {
    var mode = document.getElementById("id_mode");
    if (!mode) {
      return;
    }
    document.querySelectorAll(".calculator-group[data-mode]").forEach(function (group) {
      group.hidden = group.dataset.mode !== mode.value;
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target && event.target.id === "id_mode") {
      showModeGroups();
    }
  });
  document.addEventListener("DOMContentLoaded", showModeGroups);
  document.addEventListener("htmx:load", showModeGroups);
  showModeGroups();
})();
