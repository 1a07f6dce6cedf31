// Casebook console script: local-time labels, chart hover read-outs,
// drag-to-zoom (rewrites only the URL's from/to), optional live refresh,
// reviews saved in place and the review queue's keyboard shortcuts.
// Pages work without it.
(function () {
  "use strict";

  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  var hm = function (d) { return pad(d.getHours()) + ":" + pad(d.getMinutes()); };
  var md = function (d) { return d.toLocaleDateString(lang, { month: "short", day: "numeric" }); };

  // The page's language (the server's choice) orders the date; the
  // viewer's own time zone is named after the time, as the server names UTC.
  var lang = document.documentElement.lang || "en";
  // msg is a sentence the server printed in the page's language onto the
  // html element (data-msg-*); the English one when it is absent.
  var msg = function (key, english) { return document.documentElement.getAttribute("data-msg-" + key) || english; };
  var zone = function (d) {
    try {
      var parts = new Intl.DateTimeFormat(lang, { timeZoneName: "short" }).formatToParts(d);
      for (var i = 0; i < parts.length; i++) if (parts[i].type === "timeZoneName") return " " + parts[i].value;
    } catch (e) { /* no Intl: the time without its zone */ }
    return "";
  };
  var ymd = function (d) {
    if (lang === "zh-CN") return d.getFullYear() + "年" + (d.getMonth() + 1) + "月" + d.getDate() + "日";
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
  };

  function localTimes(root) {
    root.querySelectorAll("time[data-t]").forEach(function (el) {
      var d = new Date(+el.getAttribute("data-t") * 1000);
      el.setAttribute("datetime", d.toISOString());
      el.textContent = ymd(d) + " " + hm(d) + zone(d);
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
    label.appendChild(document.createTextNode(" " + msg("live", "Live refresh (30 s)")));
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

  // Reviews. The review and note forms post and redirect without the
  // script; with it they are sent with fetch and the page stays put.
  var NAME = "casebook.reviewer";
  function rememberName(root) {
    var saved = window.localStorage.getItem(NAME) || "";
    var fields = root.querySelectorAll('input[name="by"]');
    fields.forEach(function (el) {
      if (!el.value && saved) el.value = saved;
      el.addEventListener("change", function () {
        var v = el.value.trim();
        window.localStorage.setItem(NAME, v);
        fields.forEach(function (o) { if (o !== el) o.value = v; });
      });
    });
  }

  function post(form, submitter) {
    var body = new URLSearchParams(new FormData(form, submitter));
    return fetch(form.action, { method: "POST", body: body, headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (j) {
          if (!r.ok) throw new Error(j.message || j.error || "the server answered " + r.status);
          return j;
        });
      });
  }

  function setupReview(bar) {
    var state = bar.querySelector(".review-state");
    bar.querySelectorAll("form[data-review-form]").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        if (bar.classList.contains("saving")) return;
        bar.classList.add("saving");
        post(form, ev.submitter).then(function (j) {
          bar.setAttribute("data-verdict", j.verdict);
          state.textContent = j.state;
          state.classList.remove("review-error");
          var d = bar.querySelector("details[open]");
          if (d) d.open = false;
          var facts = document.querySelector('[data-testid="incident-verdict"]');
          if (facts && bar.closest('[data-testid="answer"]')) {
            facts.textContent = j.state;
            facts.setAttribute("data-verdict", j.verdict);
          }
          bar.dispatchEvent(new CustomEvent("casebook:reviewed", { bubbles: true, detail: j }));
        }).catch(function (e) {
          state.textContent = msg("not-saved", "Not saved:") + " " + e.message;
          state.classList.add("review-error");
        }).finally(function () { bar.classList.remove("saving"); });
      });
    });
  }

  function setupNote(form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var box = form.querySelector('input[name="body"]');
      post(form, ev.submitter).then(function () {
        var d = form.closest("details");
        if (d) {
          d.open = false;
          d.querySelector("summary").textContent = msg("note-saved", "Note saved:") + " " + box.value.slice(0, 60);
        }
        box.value = "";
        // The field is hidden now; give the keys back to the queue item at
        // once rather than whenever the browser drops focus from it.
        var item = form.closest('[data-testid="queue-item"]');
        if (item) item.focus({ preventScroll: true });
      }).catch(function (e) { box.setCustomValidity(msg("not-saved", "Not saved:") + " " + e.message); box.reportValidity(); });
    });
  }

  function leftText(n) {
    if (n === 0) return msg("left-none", "Nothing left to review from the last 7 days");
    if (n === 1) return msg("left-one", "1 incident of the last 7 days left to review");
    return msg("left-many", "{n} incidents of the last 7 days left to review").replace("{n}", n);
  }

  // The queue's keys: j/k move, c correct, w then a number wrong with that
  // cause, n note, Enter opens the incident.
  function setupQueue(list) {
    var items = function () { return Array.prototype.slice.call(list.querySelectorAll('[data-testid="queue-item"]')); };
    var cur = 0, digits = null, timer = 0, noteField = null;
    function select(i) {
      var its = items();
      if (!its.length) return;
      cur = Math.max(0, Math.min(its.length - 1, i));
      its.forEach(function (el, k) { el.classList.toggle("current", k === cur); });
      its[cur].focus({ preventScroll: true });
      its[cur].scrollIntoView({ block: "nearest" });
    }
    function pick(force) {
      window.clearTimeout(timer);
      var it = items()[cur], buttons = it.querySelectorAll("[data-cause-n]"), n = +digits;
      if (!digits) return;
      if (n < 1 || n > buttons.length) { digits = ""; return; }
      if (force || n * 10 > buttons.length) {
        digits = null;
        buttons[n - 1].click();
      } else {
        timer = window.setTimeout(function () { pick(true); }, 900);
      }
    }
    list.addEventListener("casebook:reviewed", function (ev) {
      var it = ev.target.closest('[data-testid="queue-item"]');
      if (!it || it.classList.contains("done")) return;
      it.classList.add("done");
      var total = document.querySelector("[data-total]");
      if (total) {
        total.setAttribute("data-total", Math.max(0, +total.getAttribute("data-total") - 1));
        total.textContent = total.getAttribute("data-total") + " unreviewed in all";
      }
      var left = document.querySelector("[data-left]");
      if (left && it.hasAttribute("data-recent")) {
        var n = Math.max(0, +left.getAttribute("data-left") - 1);
        left.setAttribute("data-left", n);
        left.textContent = leftText(n);
      }
      select(items().indexOf(it) + 1);
    });
    document.addEventListener("keyup", function () {
      if (noteField) { noteField.focus(); noteField = null; }
    });
    document.addEventListener("keydown", function (ev) {
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      var t = ev.target;
      if (t.closest && t.closest("input, textarea, select")) {
        if (ev.key === "Escape") t.blur();
        return;
      }
      if (ev.key === "Enter" && t.closest && t.closest("button, a, summary")) return;
      var it = items()[cur];
      if (!it) return;
      if (digits !== null) {
        if (/^[0-9]$/.test(ev.key)) { digits += ev.key; ev.preventDefault(); pick(false); return; }
        if (ev.key === "Enter") { ev.preventDefault(); pick(true); return; }
        digits = null;
        if (ev.key === "Escape") { it.querySelector("details.review-wrong").open = false; return; }
      }
      switch (ev.key) {
        case "j": select(cur + 1); break;
        case "k": select(cur - 1); break;
        case "c": it.querySelector('[data-testid="review-correct"]').click(); break;
        case "w": it.querySelector("details.review-wrong").open = true; digits = ""; break;
        case "n":
          var d = it.querySelector("details.queue-note");
          d.open = true;
          noteField = d.querySelector('input[name="body"]'); // focused on key up, so "n" is not typed into it
          break;
        case "Enter": window.location.assign(it.querySelector('[data-testid="queue-link"]').href); break;
        default: return;
      }
      ev.preventDefault();
    });
    select(0);
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    setupCharts(document);
    setupRefresh();
    rememberName(document);
    document.querySelectorAll("[data-review]").forEach(setupReview);
    document.querySelectorAll("form[data-note-form]").forEach(setupNote);
    document.querySelectorAll("[data-review-queue]").forEach(setupQueue);
  });
})();
