"""Plotly figures (data and layout dicts) for the pages; static/js/charts.js draws them.

Figures reach the page through json_script, never as inline code. Archive text inside a
figure (kernel names in hover labels, GPU names in legends) is HTML-escaped first: plotly reads
labels as a small HTML dialect (<a href> included), and escaped text becomes a plain text node.
"""
import html
import math

from .profile_display import SOL
from .selectors import BINS_PER_OCTAVE

COLOURS = {1: "#1f77b4", 2: "#ff7f0e", 3: "#2ca02c"}
_BASE_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 30, "b": 50}, "height": 360, "hovermode": "closest",
                "legend": {"orientation": "h", "y": -0.2}}


def _finite(value):
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _layout(**overrides) -> dict:
    return {**_BASE_LAYOUT, **overrides}


def speedup_distribution(histogram: list[dict]) -> dict:
    """Claimed speedups vs eager per bin, of claimed-correct kernels neither failed nor suspected,
    one bar series per level and the GPU the claims name (a claim names its GPU). Every bin from
    the slowest to the fastest is drawn (an empty bin is a gap in the data, not a bin to hide),
    always reaching 1× so the dotted 1× line (as fast as eager) has a place."""
    bins = {row.get("bin", _bin_of(row["low"])) for row in histogram}
    if not bins:
        return {"data": [], "layout": _layout(xaxis={"title": {"text": "claimed speedup vs eager"}})}
    first, last = min(min(bins), -1), max(max(bins), 0)
    every = list(range(first, last + 1))
    names = [f"{_short(2 ** (b / BINS_PER_OCTAVE))}–{_short(2 ** ((b + 1) / BINS_PER_OCTAVE))}×" for b in every]
    series = sorted({(row["level"], row.get("gpu", "")) for row in histogram})
    one_gpu = len({gpu for _, gpu in series}) == 1
    data = []
    for level, gpu in series:
        counts = {row.get("bin", _bin_of(row["low"])): row["kernels"] for row in histogram
                  if row["level"] == level and row.get("gpu", "") == gpu}
        # The GPU name is archive text: escaped, a legend entry stays plain text.
        name = html.escape(f"level {level}, claimed on {gpu or 'an unstated GPU'}")
        trace = {"type": "bar", "name": name, "x": names, "y": [counts.get(b, 0) for b in every]}
        if one_gpu:  # a colour per level; with several GPUs plotly's own palette tells the series apart
            trace["marker"] = {"color": COLOURS.get(level)}
        data.append(trace)
    one = every.index(0) - 0.5  # the category boundary where bins reach 1x
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": one, "x1": one, "y0": 0, "y1": 1,
               "line": {"dash": "dot", "color": "#57606a", "width": 2}}]
    annotations = [{"x": one, "xref": "x", "y": 1, "yref": "paper", "text": "1× (as fast as eager)",
                    "showarrow": False, "xanchor": "left", "yanchor": "bottom", "font": {"size": 11}}]
    tallest = max((sum(trace["y"][i] for trace in data) for i in range(len(every))), default=0)
    return {"data": data, "layout": _layout(
        barmode="stack", bargap=0.05, shapes=shapes, annotations=annotations, margin={"l": 90, "r": 20, "t": 40, "b": 90},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        xaxis={"title": {"text": "claimed speedup vs eager (quarter-octave bins)"}, "type": "category",
               "tickangle": -45, "automargin": True},
        # Kernel counts: whole numbers on the axis.
        yaxis={"title": {"text": "correct kernels"}, "rangemode": "tozero", "tickformat": "d",
               **({"dtick": 1} if tallest <= 10 else {})})}


def _bin_of(low: float) -> int:
    return round(math.log2(low) * BINS_PER_OCTAVE)


def _short(value: float) -> str:
    """Two significant figures: 0.0011, 0.35, 1.2, 14, 240."""
    if value >= 10:
        return f"{value:.0f}"
    return f"{value:.2g}" if value >= 0.0001 else f"{value:.1e}"


def task_speedups(kernels) -> dict:
    """Claimed speedup vs eager of each claimed-correct kernel of a task, in ranking order, with
    the re-measured speedup beside it where a trusted verification passed. Bars of kernels left
    out of the ranking (failed or suspected) are drawn in red: their claims are not to be read
    as speedups."""
    ranked = [k for k in kernels if k.claimed_correct and _finite(k.claimed_speedup_native) is not None]
    x = [f"#{k.id}" for k in ranked]
    names = [html.escape(k.name) + ("" if getattr(k, "ranked", True) else " (failed or suspected: not ranked)")
             for k in ranked]
    colours = ["#1f77b4" if getattr(k, "ranked", True) else "#cf222e" for k in ranked]
    data = [{"type": "bar", "name": "claimed (red: failed or suspected)", "x": x,
             "y": [k.claimed_speedup_native for k in ranked], "hovertext": names, "marker": {"color": colours}}]
    remeasured = [(xi, _finite(k.remeasured_speedup_eager), name) for xi, k, name in zip(x, ranked, names)
                  if _finite(k.remeasured_speedup_eager) is not None]
    if remeasured:
        data.append({"type": "scatter", "mode": "markers", "name": "re-measured (passed verification)",
                     "x": [r[0] for r in remeasured], "y": [r[1] for r in remeasured],
                     "hovertext": [r[2] for r in remeasured], "marker": {"color": "#116329", "size": 10}})
    shapes = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
               "line": {"dash": "dot", "color": "#57606a"}}]
    return {"data": data, "layout": _layout(
        xaxis={"title": {"text": "kernel (ranking order)"}, "type": "category", "showticklabels": len(x) <= 40},
        yaxis={"title": {"text": "speedup vs eager (×)"}}, shapes=shapes)}


def claimed_vs_remeasured(points: list[dict]) -> dict:
    """Scatter of every trusted re-measurement: claimed speedup (x) vs re-measured (y), both vs
    eager, log axes, the diagonal where they agree. One series per pair of GPUs, named, because
    a claim from an H100 and a re-measurement on an H200 are not the same experiment."""
    series: dict[str, list[dict]] = {}
    for point in points:
        # The GPU names are archive and record text: escaped, a legend entry is plain text, never a live link.
        label = html.escape(f"claimed on {point['claimed_gpu'] or 'an unstated GPU'}, "
                            f"re-measured on {point['remeasured_gpu'] or '?'}")
        series.setdefault(label, []).append(point)
    data = []
    for index, (label, group) in enumerate(sorted(series.items())):
        data.append({"type": "scatter", "mode": "markers", "name": label,
                     "x": [p["claimed"] for p in group], "y": [p["remeasured"] for p in group],
                     "hovertext": [html.escape(p["name"]) for p in group],
                     "customdata": [p["url"] for p in group],
                     "marker": {"size": 9, "color": list(COLOURS.values())[index % len(COLOURS)]}})
    values = [v for p in points for v in (p["claimed"], p["remeasured"]) if v and v > 0]
    low, high = (min(values) / 1.5, max(values) * 1.5) if values else (0.01, 10)
    shapes = [{"type": "line", "x0": low, "x1": high, "y0": low, "y1": high, "line": {"dash": "dot", "color": "#57606a"}}]
    return {"data": data, "layout": _layout(
        xaxis={"title": {"text": "claimed speedup vs eager (archive)"}, "type": "log"},
        yaxis={"title": {"text": "re-measured speedup vs eager (our harness)"}, "type": "log"}, shapes=shapes)}


# Utilisation metrics as % of the device's peak, in the order a reader scans them.
UTILISATION_METRICS = (
    ("Compute (SM) Throughput", "Compute (SM) throughput"), ("SM Busy", "SM busy"),
    ("Issue Slots Busy", "Issue slots busy"), (f"{SOL}: Memory Throughput", "Memory throughput (SOL)"),
    ("DRAM Throughput", "DRAM throughput"), ("Mem Busy", "Memory busy"), ("Max Bandwidth", "Max bandwidth"),
    ("Mem Pipes Busy", "Memory pipes busy"), ("L1/TEX Hit Rate", "L1/TEX hit rate"), ("L2 Hit Rate", "L2 hit rate"),
)


def speed_of_light(metrics: dict[str, tuple[float, str]]) -> dict | None:
    """Compute vs memory utilisation (% of peak) and achieved vs theoretical occupancy, from
    whichever of those NCU metrics the profile has; None when it has none."""
    bars = [(label, metrics[name][0]) for name, label in UTILISATION_METRICS
            if name in metrics and metrics[name][1] == "%" and _finite(metrics[name][0]) is not None]
    data = []
    if bars:
        data.append({"type": "bar", "orientation": "h", "name": "utilisation (% of peak)",
                     "y": [b[0] for b in bars], "x": [b[1] for b in bars], "marker": {"color": "#1f77b4"}})
    occupancy = [(label, metrics[name][0]) for name, label in
                 (("Theoretical Occupancy", "Occupancy: theoretical"), ("Achieved Occupancy", "Occupancy: achieved"))
                 if name in metrics and _finite(metrics[name][0]) is not None]
    if occupancy:
        data.append({"type": "bar", "orientation": "h", "name": "occupancy (% of max warps)",
                     "y": [o[0] for o in occupancy], "x": [o[1] for o in occupancy], "marker": {"color": "#2ca02c"}})
    if not data:
        return None
    rows = len(bars) + len(occupancy)
    return {"data": data, "layout": _layout(
        height=80 + 28 * rows, margin={"l": 190, "r": 20, "t": 10, "b": 40},
        xaxis={"title": {"text": "% of peak"}, "range": [0, 100]}, yaxis={"autorange": "reversed"})}
