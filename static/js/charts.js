// Draws every plotly figure that a page or an htmx fragment carries as inert JSON.
(function () {
  "use strict";

  function drawCharts(root) {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    root.querySelectorAll(".plotly-chart[data-figure-source]").forEach(function (container) {
      if (container.dataset.drawn === "true") {
        return;
      }
      var source = document.getElementById(container.dataset.figureSource);
      if (!source) {
        return;
      }
      var figure = JSON.parse(source.textContent);
      var layout = Object.assign({}, figure.layout || {}, { autosize: true });
      window.Plotly.newPlot(container, figure.data || [], layout, {
        responsive: true,
        displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"],
      });
      container.dataset.drawn = "true";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts(document);
  });
  document.addEventListener("htmx:load", function (event) {
    drawCharts(event.target);
  });
})();
