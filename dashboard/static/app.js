// headgate dashboard: live refresh, the backlog chart, page selection and operation
// progress. Every page reads without it; it only keeps what is shown current.
"use strict";

(function () {
  var base = document.body.dataset.base || "";

  function getJSON(url, done) {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { throw new Error(r.status + " " + r.statusText); }
        return r.json();
      })
      .then(done)
      .catch(function (err) { showStatus("live refresh paused: " + err.message); });
  }

  function showStatus(msg) {
    var el = document.getElementById("live-status");
    if (!el) {
      el = document.createElement("p");
      el.id = "live-status";
      el.className = "hint";
      document.querySelector("main").appendChild(el);
    }
    el.textContent = msg;
  }

  // Overview: counts refresh every two seconds and feed the chart.
  var queues = document.getElementById("queues");
  var chart = document.getElementById("backlog-chart");
  var samples = [];
  var maxSamples = 1800; // an hour at one sample per two seconds

  function refreshOverview() {
    getJSON(base + "/overview.json", function (s) {
      var totals = {};
      Object.keys(s.queues).forEach(function (q) {
        var row = queues.querySelector('tr[data-queue="' + CSS.escape(q) + '"]');
        var counts = s.queues[q];
        Object.keys(counts).forEach(function (state) {
          totals[state] = (totals[state] || 0) + counts[state];
          if (!row) { return; }
          var cell = row.querySelector('a[data-state="' + state + '"]');
          if (cell) { cell.textContent = counts[state]; }
        });
        if (row) {
          var held = row.querySelector("[data-held]");
          if (held) { held.textContent = s.held[q]; }
          var live = row.querySelector("[data-live]");
          if (live) { live.textContent = s.workers[q]; }
          var unserved = row.querySelector("[data-unserved]");
          if (unserved) { unserved.hidden = !s.unserved[q]; }
        }
      });
      Object.keys(totals).forEach(function (state) {
        var cell = queues.querySelector('[data-total="' + state + '"]');
        if (cell) { cell.textContent = totals[state]; }
      });
      var lw = document.getElementById("live-workers");
      if (lw) { lw.textContent = s.live_workers; }
      var t = document.getElementById("store-time");
      if (t) { t.textContent = new Date(s.now_ms).toISOString().replace("T", " ").replace("Z", " UTC"); }
      samples.push({ t: s.now_ms, totals: totals });
      if (samples.length > maxSamples) { samples.shift(); }
      drawChart();
    });
  }

  var colors = { available: "#2b7bb9", running: "#3a9d5d", retryable: "#d08b1f", archived: "#c0392b" };

  function drawChart() {
    if (!chart || !chart.getContext) { return; }
    var ctx = chart.getContext("2d");
    var series = chart.dataset.series.split(" ");
    var w = chart.width, h = chart.height, pad = 18;
    ctx.clearRect(0, 0, w, h);
    var top = 1;
    samples.forEach(function (s) {
      series.forEach(function (name) { top = Math.max(top, s.totals[name] || 0); });
    });
    ctx.font = "11px sans-serif";
    ctx.fillStyle = "#666";
    ctx.fillText(String(top), 2, 11);
    ctx.fillText("0", 2, h - 4);
    series.forEach(function (name, i) {
      ctx.strokeStyle = colors[name] || "#333";
      ctx.fillStyle = colors[name] || "#333";
      ctx.fillText(name, 60 + i * 90, 11);
      ctx.beginPath();
      samples.forEach(function (s, j) {
        var x = pad + (w - 2 * pad) * (samples.length === 1 ? 1 : j / (samples.length - 1));
        var y = h - pad - (h - 2 * pad) * ((s.totals[name] || 0) / top);
        if (j === 0) { ctx.moveTo(x, y); } else { ctx.lineTo(x, y); }
      });
      ctx.stroke();
    });
    var hint = document.getElementById("chart-hint");
    if (hint) { hint.textContent = samples.length + " sample(s), one every two seconds while this page is open."; }
  }

  if (queues) {
    refreshOverview();
    setInterval(refreshOverview, 2000);
  }

  // Listing: the header checkbox selects the whole page.
  var selectPage = document.getElementById("select-page");
  if (selectPage) {
    selectPage.addEventListener("change", function () {
      document.querySelectorAll("input.select").forEach(function (box) { box.checked = selectPage.checked; });
    });
  }

  // Operation: follow its progress until it is finished.
  var op = document.getElementById("operation");
  function refreshOperation() {
    getJSON(op.dataset.progressUrl + "?wait=400", function (v) {
      var bar = document.getElementById("op-progress");
      bar.max = v.total > 0 ? v.total : 1;
      bar.value = v.processed;
      document.getElementById("op-count").textContent = v.processed + " of " + v.total;
      var status = v.finished
        ? "Finished: " + v.done + " changed, " + v.refused + " refused, " + v.skipped + " skipped." + (v.result ? " " + v.result : "")
        : "Running: " + v.done + " changed, " + v.refused + " refused, " + v.skipped + " skipped so far.";
      document.getElementById("op-status").textContent = status;
      var list = document.getElementById("op-errors");
      list.textContent = "";
      (v.errors || []).forEach(function (e) {
        var li = document.createElement("li");
        li.textContent = e;
        list.appendChild(li);
      });
      op.dataset.finished = String(v.finished);
      if (!v.finished) { refreshOperation(); }
    });
  }
  if (op && op.dataset.finished !== "true") { refreshOperation(); }
})();
