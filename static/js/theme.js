// Light or dark (Tabler's data-bs-theme on <html>): the system's preference unless the
// user chose one in the user menu, which is kept in localStorage. Charts follow
// (charts.js listens for "gpufleet:theme").
(function () {
  "use strict";
  var KEY = "gpufleet-theme";
  var systemDark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function choice() {
    try {
      return window.localStorage.getItem(KEY) || "system";
    } catch (error) {
      return "system";
    }
  }

  function apply() {
    var chosen = choice();
    var dark = chosen === "dark" || (chosen === "system" && systemDark && systemDark.matches);
    var theme = dark ? "dark" : "light";
    document.documentElement.setAttribute("data-bs-theme", theme);
    document.querySelectorAll("[data-theme-choice]").forEach(function (button) {
      var active = button.dataset.themeChoice === chosen;
      button.classList.toggle("active", active);
      button.setAttribute("aria-pressed", active ? "true" : "false");
    });
    document.dispatchEvent(new CustomEvent("gpufleet:theme", { detail: { theme: theme } }));
  }

  apply();
  if (systemDark && systemDark.addEventListener) {
    systemDark.addEventListener("change", apply);
  }
  document.addEventListener("DOMContentLoaded", apply);
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-theme-choice]") : null;
    if (!button) {
      return;
    }
    try {
      if (button.dataset.themeChoice === "system") {
        window.localStorage.removeItem(KEY);
      } else {
        window.localStorage.setItem(KEY, button.dataset.themeChoice);
      }
    } catch (error) {
      // Storage refused (private mode): the choice lasts until the page changes.
    }
    apply();
    if (button.dataset.themeChoice !== "system") {
      document.documentElement.setAttribute("data-bs-theme", button.dataset.themeChoice);
    }
  });
})();
