// A click on a point of a chart marked data-chart-links opens the kernel it stands for. The point's
// customdata is that kernel's page, written by the server; only a path of this site's kernel pages
// is followed, never another address. Load after charts.js, which has drawn the chart by then.
document.addEventListener("DOMContentLoaded", function () {
  var KERNEL_PAGE = /^\/kernels\/\d+\/$/;
  document.querySelectorAll("[data-chart-links]").forEach(function (chart) {
    if (typeof chart.on !== "function") { return; }  // plotly missing or the chart not drawn
    chart.on("plotly_click", function (event) {
      var point = event && event.points && event.points[0];
      if (point && typeof point.customdata === "string" && KERNEL_PAGE.test(point.customdata)) {
        window.location.assign(point.customdata);
      }
    });
  });
});
