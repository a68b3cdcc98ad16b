"""Two kernels' Nsight Compute profiles side by side, differences marked. No ORM.

A metric differs when the two averages are further apart than both launches' noise and than a
share of their size: more than DIFFERENCE_SHARE relative (or DIFFERENCE_POINTS percentage points
for % metrics) and more than two standard deviations of either profile. Rows keep ncu's section
order (profile_display.ncu_sections); a metric only one profile has is listed as missing in the other.
"""
import math

from .ncu_format import in_si
from .profile_display import ncu_sections

DIFFERENCE_SHARE = 0.10
DIFFERENCE_POINTS = 5.0


def ncu_comparison(this: dict, other: dict) -> list[dict]:
    """[{name, rows: [{name, this, other, this_raw, other_raw, change, differs, direction}]}]."""
    ours = {section["name"]: {m["name"]: m for m in section["metrics"]} for section in ncu_sections(this)}
    theirs = {section["name"]: {m["name"]: m for m in section["metrics"]} for section in ncu_sections(other)}
    order = [s["name"] for s in ncu_sections(this)] + [s["name"] for s in ncu_sections(other)]
    sections = []
    for name in dict.fromkeys(order):
        metrics_a, metrics_b = ours.get(name, {}), theirs.get(name, {})
        rows = [_row(metric, metrics_a.get(metric), metrics_b.get(metric))
                for metric in dict.fromkeys([*metrics_a, *metrics_b])]
        if rows:
            sections.append({"name": name, "rows": rows, "differing": sum(row["differs"] for row in rows)})
    return sections


def _row(name: str, a: dict | None, b: dict | None) -> dict:
    unit = (a or b)["unit"]
    row = {"name": name, "unit": unit,
           "this": a["shown"].text if a else "not profiled", "this_raw": a["shown"].raw if a else "",
           "other": b["shown"].text if b else "not profiled", "other_raw": b["shown"].raw if b else "",
           "change": "", "differs": False, "direction": ""}
    if not (a and b) or not (_finite(a["value"]) and _finite(b["value"])):
        row["differs"] = bool(a) != bool(b)
        return row
    va, vb = float(a["value"]), float(b["value"])
    if unit == "%":
        row["change"] = f"{va - vb:+.1f} points"
        big = abs(va - vb) > DIFFERENCE_POINTS
    else:
        row["change"] = f"{va / vb:.2f}×" if vb else ("same" if va == 0 else "from 0")
        big = abs(va - vb) > DIFFERENCE_SHARE * max(abs(va), abs(vb))
    noise = 2 * max(_sd(a), _sd(b))
    row["differs"] = big and abs(va - vb) > noise
    if row["differs"]:
        row["direction"] = "higher" if va > vb else "lower"
        row["change_title"] = f"this kernel {in_si(va, unit)} vs {in_si(vb, unit)}"
    return row


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _sd(metric: dict) -> float:
    variance = metric.get("variance")
    return math.sqrt(variance) if _finite(variance) and variance > 0 else 0.0
