/* codeparse report: lazy code views, links both ways, finding filters.  No network. */
(function () {
  "use strict";

  // A code view is put into the page from its unparsed script element when its file is first opened.
  function render(details) {
    if (details.dataset.rendered) return;
    var view = document.getElementById("tpl-" + details.dataset.file);
    var body = details.querySelector(".code-body");
    if (view && body) body.innerHTML = view.textContent;  // autoescaped HTML made by the template
    details.dataset.rendered = "1";
  }

  function onToggle(event) {
    var d = event.target;
    if (d.classList && d.classList.contains("file") && d.open) render(d);
  }
  document.addEventListener("toggle", onToggle, true);

  // Open the file holding a line anchor (L-<file>-<n>), then show and focus the line.
  function showLine(id) {
    var m = /^L-(.+)-(\d+)$/.exec(id);
    if (!m) return false;
    var details = document.getElementById("file-" + m[1]);
    if (details) {
      render(details);
      details.open = true;
    }
    var line = document.getElementById(id);
    if (!line) return false;
    if (!line.hasAttribute("tabindex")) line.setAttribute("tabindex", "-1");
    document.querySelectorAll(".line.target").forEach(function (el) { el.classList.remove("target"); });
    line.classList.add("target");
    line.scrollIntoView({ block: "center" });
    line.focus({ preventScroll: true });
    return true;
  }

  // Show a finding's row (clearing filters that hide it) and focus it; or a code's rule.
  function showFinding(id) {
    var row = document.getElementById(id);
    if (row && row.classList.contains("rule")) {
      document.querySelectorAll(".rule.target").forEach(function (el) { el.classList.remove("target"); });
      row.classList.add("target");
      row.scrollIntoView({ block: "start" });
      row.focus({ preventScroll: true });
      return true;
    }
    if (!row || !row.classList.contains("frow")) return false;
    if (row.hidden) {
      var section = row.closest(".findings");
      resetFilters(section);
    }
    document.querySelectorAll(".frow.target").forEach(function (el) { el.classList.remove("target"); });
    row.classList.add("target");
    if (!row.hasAttribute("tabindex")) row.setAttribute("tabindex", "-1");
    row.scrollIntoView({ block: "center" });
    row.focus({ preventScroll: true });
    return true;
  }

  document.addEventListener("click", function (event) {
    var a = event.target.closest ? event.target.closest("a[href^='#']") : null;
    if (!a) return;
    var id = decodeURIComponent(a.getAttribute("href").slice(1));
    var done = id.indexOf("L-") === 0 ? showLine(id) : showFinding(id);
    if (done) {
      event.preventDefault();
      if (history.replaceState) history.replaceState(null, "", "#" + id);
    }
  });

  // Findings filters: code, severity, file, reachable only, and free text.
  function applyFilters(section) {
    var code = section.querySelector(".f-code").value;
    var sev = section.querySelector(".f-severity").value;
    var file = section.querySelector(".f-file").value;
    var reach = section.querySelector(".f-reachable").checked;
    var text = section.querySelector(".f-search").value.trim().toLowerCase();
    var rows = section.querySelectorAll(".frow");
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!code || row.dataset.code === code) &&
        (!sev || row.dataset.severity === sev) &&
        (!file || row.dataset.file === file) &&
        (!reach || row.dataset.reachable === "yes") &&
        (!text || row.textContent.toLowerCase().indexOf(text) !== -1);
      row.hidden = !ok;
      if (ok) shown += 1;
    });
    var count = section.querySelector(".count");
    if (count) count.textContent = shown + " of " + rows.length;
  }

  function resetFilters(section) {
    if (!section || !section.querySelector(".filters")) return;
    section.querySelectorAll(".filters select").forEach(function (s) { s.value = ""; });
    section.querySelector(".f-reachable").checked = false;
    section.querySelector(".f-search").value = "";
    applyFilters(section);
  }

  document.querySelectorAll(".findings").forEach(function (section) {
    if (!section.querySelector(".filters")) return;
    section.querySelectorAll(".filters select, .filters input").forEach(function (el) {
      el.addEventListener("input", function () { applyFilters(section); });
      el.addEventListener("change", function () { applyFilters(section); });
    });
  });

  // A single code file is shown open; a link in the address opens its target.
  document.querySelectorAll("details.file[data-open]").forEach(function (d) { render(d); d.open = true; });
  if (location.hash.length > 1) {
    var target = decodeURIComponent(location.hash.slice(1));
    if (target.indexOf("L-") === 0) showLine(target); else showFinding(target);
  }
  document.body.dataset.readyMs = performance.now().toFixed(1);  // since navigation start
  document.body.dataset.ready = "1";
})();
