// Draws every plotly figure of the page: <div data-chart="ID"> reads its figure from the
// <script type="application/json" id="ID"> that Django's json_script wrote.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("[data-chart]").forEach(function (target) {
    var source = document.getElementById(target.dataset.chart);
    if (!source || typeof Plotly === "undefined") { return; }
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(target, figure.data, figure.layout, {displaylogo: false, responsive: true});
  });
});
