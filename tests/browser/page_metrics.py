"""What a page cost the browser, from its own Resource Timing entries (same origin, so
transferSize is what came over the wire: headers and the encoded body; 0 when the browser
used its cache without asking). Shared by the page-weight test and bench/bench_browser_pages.py."""

METRICS_JS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const resources = performance.getEntriesByType("resource");
  const sum = (key) => resources.reduce((total, r) => total + (r[key] || 0), 0);
  return {
    transferred: nav.transferSize + sum("transferSize"),
    decoded: nav.decodedBodySize + sum("decodedBodySize"),
    html_transferred: nav.transferSize, html_decoded: nav.decodedBodySize,
    dom_content_loaded_ms: nav.domContentLoadedEventEnd, load_ms: nav.loadEventEnd, now_ms: performance.now(),
    resources: resources.map(r => ({url: r.name, transferred: r.transferSize, decoded: r.decodedBodySize})),
  };
}"""

# Every plotly chart on the page has drawn (plotly adds .main-svg to each chart's container).
CHARTS_DRAWN_JS = """() => Array.from(document.querySelectorAll("div.chart[data-chart]"))
  .every(el => el.querySelector(".main-svg") !== null)"""


def visit(page, url: str) -> dict:
    """Open url and wait until it is loaded and every chart on it is drawn: ready_ms is the
    time from the start of navigation to then. Then wait for the network to be idle and
    return the page's metrics."""
    response = page.goto(url)
    assert response.status == 200, url
    page.wait_for_load_state("load")
    page.wait_for_function(CHARTS_DRAWN_JS, polling=10)
    ready_ms = page.evaluate("() => performance.now()")
    page.wait_for_load_state("networkidle")
    metrics = page.evaluate(METRICS_JS)
    metrics["ready_ms"] = ready_ms
    return metrics
