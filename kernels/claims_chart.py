"""The claims page's scatter (a plotly figure as data; static/js/charts.js draws it from json_script,
static/js/chart_links.js opens a point's kernel on click).

Archive text (kernel, source and GPU names) is HTML-escaped before it enters a label: plotly reads
labels as a small HTML dialect (<a href> included), and escaped text stays a plain text node.
"""
import html

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f")


def _gpu(name: str | None, missing: str) -> str:
    return name or missing


def claims_scatter(points: list[dict]) -> dict:
    """Claimed (x) vs re-measured (y) speedup vs eager, log axes, and the line where they agree.
    One series per source, claimed GPU and re-measured GPU: a claim made on an A100 and a
    re-measurement on an H200 are different experiments, so the legend says which is which."""
    series: dict[str, list[dict]] = {}
    for point in points:
        # Two lines (our own <br>), so a phone's legend wraps instead of cutting the GPUs off.
        label = "<br>".join((html.escape(point["source"]), html.escape(
            f"claimed on {_gpu(point['claimed_gpu'], 'an unstated GPU')}, "
            f"re-measured on {_gpu(point['remeasured_gpu'], 'an unrecorded GPU')}")))
        series.setdefault(label, []).append(point)
    data = []
    for index, (label, group) in enumerate(sorted(series.items())):
        data.append({
            "type": "scatter", "mode": "markers", "name": label, "hoverinfo": "text+name",
            "x": [_short(p["claimed"]) for p in group], "y": [_short(p["remeasured"]) for p in group],
            "hovertext": [_hover(p) for p in group], "customdata": [p["url"] for p in group],
            "marker": {"size": 9, "opacity": 0.85, "color": PALETTE[index % len(PALETTE)]},
        })
    values = [v for p in points for v in (p["claimed"], p["remeasured"])]
    low, high = (min(values) / 1.5, max(values) * 1.5) if values else (0.1, 10.0)
    data.append({"type": "scatter", "mode": "lines", "name": "re-measured = claimed", "hoverinfo": "skip",
                 "x": [low, high], "y": [low, high], "line": {"dash": "dot", "color": "#57606a", "width": 1.5}})
    return {"data": data, "layout": {
        "margin": {"l": 60, "r": 20, "t": 20, "b": 50}, "height": 440, "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": {"title": {"text": "claimed speedup vs eager"}, "type": "log"},
        "yaxis": {"title": {"text": "re-measured speedup vs eager"}, "type": "log"},
    }}


def _short(value: float) -> float:
    """Four significant digits: the chart's JSON is a third of the page at 5,000 points."""
    return float(f"{value:.4g}")


def _hover(point: dict) -> str:
    # The kernel's name, escaped, and the speedups; the series' name (source, GPUs) shows beside it.
    # Our own <br> is the only markup. No <b>: plotly writes it as an inline style attribute,
    # which the site's CSP refuses.
    return f"{html.escape(point['name'])}<br>claimed {point['claimed']:.2f}× · re-measured {point['remeasured']:.2f}×"
