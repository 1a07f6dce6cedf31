// Casebook console script: local-time labels, chart hover read-outs,
// drag-to-zoom (rewrites only the URL's from/to) and optional live refresh.
// Pages work without it.
(function () {
  "use strict";

  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  var hm = function (d) { return pad(d.getHours()) + ":" + pad(d.getMinutes()); };
  var md = function (d) { return d.toLocaleDateString(undefined, { month: "short", day: "numeric" }); };

  function localTimes(root) {
    root.querySelectorAll("time[data-t]").forEach(function (el) {
      var d = new Date(+el.getAttribute("data-t") * 1000);
      el.setAttribute("datetime", d.toISOString());
      el.textContent = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hm(d);
    });
    root.querySelectorAll("figure.chart").forEach(function (fig) {
      var svg = fig.querySelector("svg.chart-svg");
      if (!svg) return;
      var span = +svg.dataset.t1 - +svg.dataset.t0;
      var ticks = fig.querySelectorAll("text.xtick[data-t]");
      var step = ticks.length > 1 ? +ticks[1].getAttribute("data-t") - +ticks[0].getAttribute("data-t") : 0;
      ticks.forEach(function (el) {
        var d = new Date(+el.getAttribute("data-t") * 1000);
        el.textContent = step >= 86400 ? md(d) : span > 86400 ? md(d) + " " + hm(d) : hm(d);
      });
    });
  }

  function fmt(unit, v) {
    if (!isFinite(v)) return "–";
    var n = function (x) {
      var a = Math.abs(x);
      if (a >= 1e4) return (x / 1e3).toFixed(1) + "k";
      if (a >= 100 || a === 0) return x.toFixed(0);
      if (a >= 10) return x.toFixed(1);
      if (a >= 1) return x.toFixed(2);
      return x.toFixed(3);
    };
    switch (unit) {
      case "ms": return Math.abs(v) >= 1000 ? (v / 1000).toFixed(2) + " s" : n(v) + " ms";
      case "ratio": return (v * 100).toFixed(v < 0.1 ? 1 : 0) + "%";
      case "count": return n(v);
      case "1/s": return n(v) + " /s";
      default: return n(v) + " " + unit;
    }
  }

  var SVGNS = "http://www.w3.org/2000/svg";

  function setupChart(svg) {
    var t0 = +svg.dataset.t0, t1 = +svg.dataset.t1, x0 = +svg.dataset.x0, x1 = +svg.dataset.x1;
    var vb = svg.viewBox.baseVal, unit = svg.dataset.unit;
    var lines = Array.prototype.map.call(svg.querySelectorAll("path.line"), function (p) {
      return {
        name: p.dataset.name,
        cls: p.getAttribute("class").split(" ")[1],
        ts: (p.dataset.ts || "").split(",").map(Number),
        vs: (p.dataset.v || "").split(",").map(Number)
      };
    });
    var box = svg.parentNode;
    var readout = document.createElement("div");
    readout.className = "readout";
    readout.hidden = true;
    box.appendChild(readout);
    var cursor = document.createElementNS(SVGNS, "line");
    cursor.setAttribute("class", "cursor");
    cursor.setAttribute("y1", 0);
    cursor.setAttribute("y2", vb.height);
    cursor.setAttribute("visibility", "hidden");
    svg.appendChild(cursor);
    var zoom = document.createElementNS(SVGNS, "rect");
    zoom.setAttribute("class", "zoom");
    zoom.setAttribute("y", 0);
    zoom.setAttribute("height", vb.height);
    zoom.setAttribute("visibility", "hidden");
    svg.appendChild(zoom);
    var dragFrom = null;

    function toX(ev) {
      var r = svg.getBoundingClientRect();
      return Math.min(x1, Math.max(x0, (ev.clientX - r.left) / r.width * vb.width));
    }
    function toT(x) { return t0 + (x - x0) / (x1 - x0) * (t1 - t0); }
    function nearest(ts, t) {
      var lo = 0, hi = ts.length - 1;
      if (hi < 0) return -1;
      while (hi - lo > 1) {
        var mid = (lo + hi) >> 1;
        if (ts[mid] < t) lo = mid; else hi = mid;
      }
      return Math.abs(ts[lo] - t) <= Math.abs(ts[hi] - t) ? lo : hi;
    }

    svg.addEventListener("mousemove", function (ev) {
      var x = toX(ev), t = toT(x);
      cursor.setAttribute("x1", x);
      cursor.setAttribute("x2", x);
      cursor.setAttribute("visibility", "visible");
      if (dragFrom !== null) {
        zoom.setAttribute("x", Math.min(dragFrom, x));
        zoom.setAttribute("width", Math.abs(x - dragFrom));
        zoom.setAttribute("visibility", "visible");
      }
      var d = new Date(t * 1000);
      readout.textContent = "";
      var head = document.createElement("div");
      head.textContent = md(d) + " " + hm(d);
      readout.appendChild(head);
      lines.forEach(function (l) {
        var i = nearest(l.ts, t);
        if (i < 0) return;
        var row = document.createElement("div");
        var sw = document.createElement("span");
        sw.className = "swatch " + l.cls;
        row.appendChild(sw);
        row.appendChild(document.createTextNode(l.name + ": " + fmt(unit, l.vs[i])));
        readout.appendChild(row);
      });
      readout.hidden = false;
      var r = svg.getBoundingClientRect(), px = ev.clientX - r.left;
      var w = readout.offsetWidth;
      readout.style.left = (px + 12 + w > r.width ? Math.max(0, px - 12 - w) : px + 12) + "px";
    });
    svg.addEventListener("mouseleave", function () {
      readout.hidden = true;
      cursor.setAttribute("visibility", "hidden");
      zoom.setAttribute("visibility", "hidden");
      dragFrom = null;
    });
    svg.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      dragFrom = toX(ev);
    });
    svg.addEventListener("mouseup", function (ev) {
      if (dragFrom === null) return;
      var x = toX(ev), a = Math.min(dragFrom, x), b = Math.max(dragFrom, x);
      dragFrom = null;
      zoom.setAttribute("visibility", "hidden");
      if (b - a < 4) return;
      var from = Math.floor(toT(a)), to = Math.ceil(toT(b));
      if (to - from < 60) to = from + 60;
      var u = new URL(window.location.href);
      u.searchParams.delete("range");
      u.searchParams.set("from", new Date(from * 1000).toISOString().replace(/\.\d+Z$/, "Z"));
      u.searchParams.set("to", new Date(to * 1000).toISOString().replace(/\.\d+Z$/, "Z"));
      window.location.assign(u.toString());
    });
  }

  function setupCharts(root) {
    root.querySelectorAll("svg.chart-svg").forEach(setupChart);
  }

  var KEY = "casebook.live";
  function setupRefresh() {
    var main = document.getElementById("main");
    if (!main || !main.hasAttribute("data-refresh-page")) return;
    var head = document.querySelector(".page-head");
    if (!head) return;
    var label = document.createElement("label");
    label.className = "muted live-toggle";
    var box = document.createElement("input");
    box.type = "checkbox";
    box.checked = window.localStorage.getItem(KEY) === "1";
    label.appendChild(box);
    label.appendChild(document.createTextNode(" Live refresh (30 s)"));
    head.appendChild(label);
    box.addEventListener("change", function () { window.localStorage.setItem(KEY, box.checked ? "1" : "0"); });
    window.setInterval(function () {
      if (!box.checked || document.hidden) return;
      var live = document.getElementById("live");
      if (!live) return;
      fetch(window.location.href, { headers: { "X-Casebook-Fragment": "live" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          var src = doc.getElementById("live") || doc.body;
          live.replaceChildren.apply(live, Array.prototype.slice.call(src.childNodes));
          localTimes(live);
          setupCharts(live);
        })
        .catch(function () { /* keep the last good view */ });
    }, 30000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    setupCharts(document);
    setupRefresh();
  });
})();
