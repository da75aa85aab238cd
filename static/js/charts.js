// Draws every plotly figure that a page or an htmx fragment carries as inert JSON, in the
// page's theme (theme.js): on a dark page the background is transparent and text and grid
// lines are light; the figure's own colours (one per purpose) stay as they are.
(function () {
  "use strict";

  var DARK = { text: "#c8d3e1", grid: "rgba(200, 211, 225, 0.15)" };

  function currentTheme() {
    return document.documentElement.getAttribute("data-bs-theme") === "dark" ? "dark" : "light";
  }

  function axisNames(layout) {
    var names = Object.keys(layout).filter(function (key) {
      return /^[xy]axis\d*$/.test(key);
    });
    return names.length ? names : ["xaxis", "yaxis"];
  }

  // The layout changes that put ``original`` (the figure's own layout) in ``theme``.
  function themed(original, theme) {
    var changes = {};
    var dark = theme === "dark";
    var font = original.font || {};
    changes["font.color"] = dark ? DARK.text : font.color || "#444";
    changes.paper_bgcolor = dark ? "rgba(0,0,0,0)" : original.paper_bgcolor || "#fff";
    changes.plot_bgcolor = dark ? "rgba(0,0,0,0)" : original.plot_bgcolor || "#fff";
    axisNames(original).forEach(function (name) {
      var axis = original[name] || {};
      changes[name + ".gridcolor"] = dark ? DARK.grid : axis.gridcolor || "#eee";
      changes[name + ".zerolinecolor"] = dark ? DARK.grid : axis.zerolinecolor || "#444";
    });
    return changes;
  }

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
      var original = figure.layout || {};
      var layout = Object.assign({}, original, { autosize: true });
      window.Plotly.newPlot(container, figure.data || [], layout, {
        responsive: true,
        displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"],
      });
      container._gpufleetLayout = original;
      window.Plotly.relayout(container, themed(original, currentTheme()));
      container.dataset.drawn = "true";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts(document);
  });
  document.addEventListener("htmx:load", function (event) {
    drawCharts(event.target);
  });
  document.addEventListener("gpufleet:theme", function (event) {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    document.querySelectorAll(".plotly-chart[data-drawn='true']").forEach(function (container) {
      window.Plotly.relayout(container, themed(container._gpufleetLayout || {}, event.detail.theme));
    });
  });
})();
