// The upload form's scrape time: a dcgm-exporter scrape has no timestamps of its own, and
// the file's modification time is when it was saved from /metrics. It is written in the
// form's time zone, where the server reads it; a time someone typed is left alone.
(function () {
  "use strict";

  function zoneOrUtc(name) {
    try {
      new Intl.DateTimeFormat("en", { timeZone: name });
      return name;
    } catch (error) {
      return "UTC";
    }
  }

  // "2026-12-01T09:15:30", the value a datetime-local input takes, in the given zone.
  function localValue(milliseconds, zone) {
    var parts = {};
    new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(new Date(milliseconds))
      .forEach(function (part) {
        parts[part.type] = part.value;
      });
    return (
      parts.year + "-" + parts.month + "-" + parts.day + "T" +
      parts.hour + ":" + parts.minute + ":" + parts.second
    );
  }

  function fields(form) {
    return {
      scrape: form.querySelector("[data-scrape-time]"),
      file: form.querySelector("input[type=file]"),
      format: form.querySelector("select[name=format]"),
      zone: form.querySelector("input[name=time_zone]"),
    };
  }

  function fillFromFile(form) {
    var found = fields(form);
    if (!found.scrape || !found.file || !found.file.files.length) {
      return;
    }
    var typedByHand = found.scrape.value && found.scrape.value !== found.scrape.dataset.filled;
    if (typedByHand) {
      return;
    }
    var zone = zoneOrUtc(found.zone ? found.zone.value.trim() : "UTC");
    var value = localValue(found.file.files[0].lastModified, zone);
    found.scrape.value = value;
    // Read back: the browser may shorten "…:00" seconds.
    found.scrape.dataset.filled = found.scrape.value;
  }

  // Only dcgm scrapes need the field; the others carry their own timestamps. A file
  // whose format is detected may be a scrape, so it keeps the field.
  function showForFormat(form) {
    var found = fields(form);
    if (!found.scrape || !found.format) {
      return;
    }
    var group = found.scrape.closest(".mb-3") || found.scrape;
    group.hidden = found.format.value !== "dcgm" && found.format.value !== "detect";
  }

  document.addEventListener("change", function (event) {
    var form = event.target && event.target.form;
    if (!form || !form.querySelector("[data-scrape-time]")) {
      return;
    }
    if (event.target.type === "file" || event.target.name === "time_zone") {
      fillFromFile(form);
    }
    if (event.target.name === "format") {
      showForFormat(form);
    }
  });

  function setUp() {
    document.querySelectorAll("form").forEach(function (form) {
      if (form.querySelector("[data-scrape-time]")) {
        showForFormat(form);
      }
    });
  }
  document.addEventListener("DOMContentLoaded", setUp);
  document.addEventListener("htmx:load", setUp);
})();
