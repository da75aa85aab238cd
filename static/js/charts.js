// Draws every plotly figure that a page or an htmx fragment carries as inert JSON, in the
// page's theme (theme.js): on a dark page the background is transparent and text and grid
// lines are light; the figure's own colours (one per purpose) stay as they are.
(function () {
  "use strict";

  var DARK = { text: "#c8d3e1", grid: "rgba(200, 211, 225, 0.15)" };
  var WORDS = {
    en: { csv: "Download the data (CSV)", svg: "Download as SVG", png: "Download as PNG" },
    "zh-hans": { csv: "下载数据 (CSV)", svg: "下载为 SVG", png: "下载为 PNG" },
  };

  // Date axes in Chinese: plotly.js formats month and day names from a locale, which the
  // plotly wheel does not ship; these are the names of plotly.js's own zh-CN locale file.
  var ZH_CN = {
    moduleType: "locale",
    name: "zh-CN",
    dictionary: {},
    format: {
      days: ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
      shortDays: ["周日", "周一", "周二", "周三", "周四", "周五", "周六"],
      months: ["一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月", "十二月"],
      shortMonths: ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月", "12月"],
      date: "%Y-%m-%d",
      year: "%Y年",
      month: "%Y年%-m月",
      dayMonth: "%-m月%-d日",
      dayMonthYear: "%Y年%-m月%-d日",
    },
  };

  function plotlyLocale() {
    return document.documentElement.lang === "zh-hans" ? "zh-CN" : "en";
  }

  function words() {
    return WORDS[document.documentElement.lang] || WORDS.en;
  }

  // A spreadsheet must read a name as text, never as a formula (=, +, -, @, tab, CR).
  function csvCell(value) {
    if (value === null || value === undefined) {
      return "";
    }
    var text = String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) {
      text = "'" + text;
    }
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  // One row per point of every trace: trace name, then x and y (labels and values for a
  // pie, x, y and z for a heatmap).
  function figureCsv(figure) {
    var rows = [["series", "x", "y", "z"]];
    (figure.data || []).forEach(function (trace, index) {
      var name = trace.name || "series " + (index + 1);
      if (trace.labels && trace.values) {
        trace.labels.forEach(function (label, i) {
          rows.push([name, label, trace.values[i], ""]);
        });
      } else if (trace.z && Array.isArray(trace.z[0])) {
        trace.z.forEach(function (row, j) {
          row.forEach(function (value, i) {
            rows.push([name, trace.x ? trace.x[i] : i, trace.y ? trace.y[j] : j, value]);
          });
        });
      } else {
        var xs = trace.x || [];
        var ys = trace.y || [];
        var count = Math.max(xs.length, ys.length);
        for (var i = 0; i < count; i += 1) {
          rows.push([name, xs[i], ys[i], ""]);
        }
      }
    });
    return rows.map(function (row) { return row.map(csvCell).join(","); }).join("\r\n") + "\r\n";
  }

  function download(filename, text) {
    var link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob(["\ufeff" + text], { type: "text/csv;charset=utf-8" }));
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  function modeBarButtons(container, figure) {
    var name = container.id || "chart";
    return [
      {
        name: "download-csv",
        title: words().csv,
        icon: window.Plotly.Icons.disk,
        click: function () { download(name + ".csv", figureCsv(figure)); },
      },
      {
        name: "download-svg",
        title: words().svg,
        icon: window.Plotly.Icons.camera,
        click: function (chart) {
          window.Plotly.downloadImage(chart, { format: "svg", filename: name });
        },
      },
    ];
  }

  // The legend sits between the title and the plot; a legend that wraps onto more lines
  // than the margin leaves would cover the title, so the top margin grows to fit it.
  function keepTitleClear(container) {
    var title = container.querySelector(".g-gtitle");
    var legend = container.querySelector(".legend");
    if (!title || !legend) {
      return;
    }
    var overlap = title.getBoundingClientRect().bottom - legend.getBoundingClientRect().top;
    if (overlap > -4) {
      var margin = container._fullLayout.margin;
      window.Plotly.relayout(container, { "margin.t": margin.t + overlap + 8 });
    }
  }

  // A date axis with a single instant would be stretched to a few milliseconds either
  // side ("04:59:59.9995"): give it an hour either side instead, unless the figure
  // chose its own range.
  function widenSingleInstant(container, figure) {
    var changes = {};
    var own = figure.layout || {};
    Object.keys(container._fullLayout).forEach(function (key) {
      var axis = container._fullLayout[key];
      if (!/^xaxis\d*$/.test(key) || !axis || axis.type !== "date" || (own[key] || {}).range) {
        return;
      }
      var instants = {};
      (figure.data || []).forEach(function (trace) {
        (trace.x || []).forEach(function (x) { instants[x] = true; });
      });
      var distinct = Object.keys(instants);
      if (distinct.length === 1) {
        var at = new Date(distinct[0]).getTime();
        changes[key + ".range"] = [new Date(at - 3600000).toISOString(), new Date(at + 3600000).toISOString()];
      }
    });
    if (Object.keys(changes).length) {
      window.Plotly.relayout(container, changes);
    }
  }

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

  var localeRegistered = false;

  function drawCharts(root) {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    if (!localeRegistered) {
      window.Plotly.register(ZH_CN);
      localeRegistered = true;
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
        modeBarButtonsToAdd: modeBarButtons(container, figure),
        toImageButtonOptions: { format: "png", filename: container.id || "chart", scale: 2 },
        locale: plotlyLocale(),
      });
      container._gpufleetLayout = original;
      window.Plotly.relayout(container, themed(original, currentTheme()));
      widenSingleInstant(container, figure);
      keepTitleClear(container);
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
