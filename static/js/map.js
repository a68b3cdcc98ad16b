// The archive's map: one WebGL point per kernel at its stored UMAP coordinates (/api/map/),
// coloured by the chosen property; hover shows the kernel, a click opens its page, and a
// kernel (?highlight=<id>) or a search's results (?q=...) are drawn on top.
(function () {
  "use strict";
  var target = document.getElementById("kernel-map");
  if (!target || typeof Plotly === "undefined") { return; }
  var status = document.getElementById("map-status");
  var colourSelect = document.getElementById("map-colour");
  var techniqueSelect = document.getElementById("map-technique");
  var techniqueLabel = document.getElementById("map-technique-label");
  var CATEGORY_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                          "#17becf", "#bcbd22", "#7f7f7f"];
  var MAX_LEGEND_CATEGORIES = 12;
  var data = null;
  var highlighted = [];

  // Scattergl needs WebGL; without it (old browsers, some headless setups) plain SVG still works.
  function webglAvailable() {
    try {
      var canvas = document.createElement("canvas");
      return !!(canvas.getContext("webgl") || canvas.getContext("experimental-webgl"));
    } catch (error) { return false; }
  }
  var TRACE_TYPE = webglAvailable() ? "scattergl" : "scatter";

  function escapeHtml(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function hoverText(p, i) {
    var speedup = p.speedup[i] === null ? "–" : p.speedup[i].toFixed(2) + "×";
    return "<b>" + escapeHtml(p.name[i]) + "</b><br>" + escapeHtml(p.task[i] + " " + p.op_name[i]) +
      "<br>claimed speedup " + speedup + " · " + (p.correct[i] ? "correct" : "incorrect") +
      " · " + escapeHtml(p.verification[i]) +
      (p.techniques[i].length ? "<br>" + escapeHtml(p.techniques[i].map(function (t) { return data.techniques[t] || t; }).join(", ")) : "");
  }

  function pointTrace(name, indices, marker) {
    var p = data.points;
    return {
      type: TRACE_TYPE, mode: "markers", name: name, hoverinfo: "text",
      x: indices.map(function (i) { return p.x[i]; }),
      y: indices.map(function (i) { return p.y[i]; }),
      customdata: indices.map(function (i) { return p.id[i]; }),
      text: indices.map(function (i) { return hoverText(p, i); }),
      marker: Object.assign({size: 6, opacity: 0.8}, marker),
    };
  }

  function categoryTraces(valueOf) {
    var groups = {};
    var order = [];
    data.points.id.forEach(function (_, i) {
      var key = String(valueOf(i));
      if (!(key in groups)) { groups[key] = []; order.push(key); }
      groups[key].push(i);
    });
    order.sort();
    return order.map(function (key, n) {
      return pointTrace(key, groups[key], {color: CATEGORY_COLOURS[n % CATEGORY_COLOURS.length]});
    });
  }

  function tracesFor(mode) {
    var p = data.points;
    var all = p.id.map(function (_, i) { return i; });
    if (mode === "level") { return categoryTraces(function (i) { return "level " + p.level[i]; }); }
    if (mode === "correct") { return categoryTraces(function (i) { return p.correct[i] ? "correct" : "incorrect"; }); }
    if (mode === "verification") { return categoryTraces(function (i) { return p.verification[i]; }); }
    if (mode === "technique") {
      var tag = techniqueSelect.value;
      var name = data.techniques[tag] || tag;
      return categoryTraces(function (i) { return p.techniques[i].indexOf(tag) >= 0 ? name : "without " + name; });
    }
    if (mode === "task") {
      var tasks = Array.from(new Set(p.task)).sort();
      if (tasks.length <= MAX_LEGEND_CATEGORIES) { return categoryTraces(function (i) { return p.task[i]; }); }
      // Hundreds of tasks: a continuous scale over task order, the task named on hover.
      var rank = {};
      tasks.forEach(function (t, n) { rank[t] = n; });
      return [pointTrace("tasks", all, {color: all.map(function (i) { return rank[p.task[i]]; }),
                                        colorscale: "Turbo", showscale: false})];
    }
    // Speedup: log scale (0.1x..10x spans the archive); kernels without a speedup in grey.
    var measured = all.filter(function (i) { return p.speedup[i] !== null && p.speedup[i] > 0; });
    var missing = all.filter(function (i) { return !(p.speedup[i] !== null && p.speedup[i] > 0); });
    return [
      pointTrace("no speedup", missing, {color: "#c0c4c8"}),
      pointTrace("claimed speedup", measured, {
        color: measured.map(function (i) { return Math.log10(p.speedup[i]); }), colorscale: "RdBu",
        cmid: 0, colorbar: {title: {text: "speedup"}, tickvals: [-1, 0, 1], ticktext: ["0.1×", "1×", "10×"]},
      }),
    ];
  }

  function highlightTrace() {
    var indices = [];
    data.points.id.forEach(function (id, i) { if (highlighted.indexOf(id) >= 0) { indices.push(i); } });
    var trace = pointTrace("highlighted", indices, {size: 14, color: "rgba(255,215,0,0.9)",
                                                    line: {color: "#000", width: 2}});
    trace.marker.opacity = 1;
    return trace;
  }

  function draw() {
    var mode = colourSelect.value;
    techniqueLabel.hidden = mode !== "technique";
    var traces = tracesFor(mode);
    if (highlighted.length) { traces.push(highlightTrace()); }
    var layout = {
      margin: {l: 20, r: 20, t: 10, b: 20}, hovermode: "closest", dragmode: "pan",
      xaxis: {showticklabels: false, zeroline: false, showgrid: false},
      yaxis: {showticklabels: false, zeroline: false, showgrid: false},
      legend: {orientation: "h"},
    };
    return Plotly.react(target, traces, layout, {displaylogo: false, responsive: true, scrollZoom: true})
      .then(function () { target.dataset.pointsDrawn = String(data.count); });
  }

  function fetchJson(url) {
    return fetch(url, {headers: {Accept: "application/json"}}).then(function (response) {
      if (!response.ok) { throw new Error(url + ": HTTP " + response.status); }
      return response.json();
    });
  }

  function loadHighlights() {
    var ids = target.dataset.highlight ? [parseInt(target.dataset.highlight, 10)] : [];
    var query = target.dataset.query;
    if (!query) { return Promise.resolve(ids); }
    return fetchJson(target.dataset.searchUrl + "?limit=20&q=" + encodeURIComponent(query)).then(function (found) {
      if (found.state !== "ready") { status.textContent = found.message; }
      return ids.concat(found.results.map(function (hit) { return hit.kernel_id; }));
    });
  }

  Promise.all([fetchJson(target.dataset.pointsUrl), loadHighlights()]).then(function (loaded) {
    data = loaded[0];
    highlighted = loaded[1];
    if (!data.count) {
      status.textContent = "No map yet: run `python manage.py build_map`.";
      target.dataset.pointsDrawn = "0";
      return;
    }
    status.textContent = data.count + " kernels" + (data.built_at ? ", map built " + data.built_at.slice(0, 16).replace("T", " ") : "") +
      (highlighted.length ? ", " + highlighted.length + " highlighted" : "");
    return draw().then(function () {
      target.on("plotly_click", function (event) {
        var id = event.points.length && event.points[0].customdata;
        if (id) { window.location.href = target.dataset.kernelUrl.replace("/0/", "/" + id + "/"); }
      });
    });
  }).catch(function (error) { status.textContent = "The map could not be loaded: " + error.message; });

  colourSelect.addEventListener("change", draw);
  techniqueSelect.addEventListener("change", draw);
})();
