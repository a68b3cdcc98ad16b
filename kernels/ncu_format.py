"""Nsight Compute numbers as engineers read them: SI units (185.6 GB/s, 48.77 µs, 12.5 %,
11.8 MB), the spread as ± one standard deviation in the same unit, and the raw value kept for a
hover title. No ORM.

ncu writes rates and sizes in decimal SI (1 Kbyte = 1000 byte), so GB/s here is 1e9 byte/s.
Units come from the archive's profiles ("byte/second", "byte", "%", "cycle", "inst/cycle", ...)
and from ncu's own text or CSV pages ("Tbyte/s", "usecond", "Ghz", "Kbyte/block", ...).
"""
import math
from dataclasses import dataclass

_SI_UP = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_PREFIX = {"n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3, "": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
# Unit spellings -> (kind, scale to the base unit).
_BYTE_RATES = ("byte/second", "byte/s")
_TIMES = ("second", "s")
_FREQUENCIES = ("hz", "Hz", "cycle/second", "cycle/s")


@dataclass(frozen=True)
class Shown:
    text: str  # what the cell shows
    raw: str  # the value as recorded, for the hover title


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def _significant(value: float, digits: int = 4) -> str:
    if value == int(value) and abs(value) < 1e15:  # counts: 32 warps, 65,536 blocks
        return f"{int(value):,}"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    return f"{value:,.{decimals}f}"


def _split(unit: str, bases) -> float | None:
    """The prefix scale of `unit` if it is one of `bases` with an SI prefix (Kbyte/s, usecond)."""
    for base in sorted(bases, key=len, reverse=True):
        if unit.endswith(base) and unit[: len(unit) - len(base)] in _PREFIX:
            return _PREFIX[unit[: len(unit) - len(base)]]
    return None


def _scaled(value: float, unit: str) -> str:
    magnitude = abs(value)
    for factor, prefix in _SI_UP:
        if magnitude >= factor or factor == 1.0:
            return f"{_significant(value / factor)} {prefix}{unit}"
    return f"{_significant(value)} {unit}"  # pragma: no cover


def _duration(seconds: float) -> str:
    magnitude = abs(seconds)
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if magnitude >= factor:
            return f"{_significant(seconds / factor)} {unit}"
    return f"{_significant(seconds / 1e-9)} ns"


def in_si(value, unit: str) -> str:
    """The value in the unit a reader expects ('185.6 GB/s', '48.77 µs', '12.47 %'); '–' if none."""
    number = _number(value)
    if number is None:
        return "–" if value is None else str(value)
    unit = (unit or "").strip()
    if (scale := _split(unit, _BYTE_RATES)) is not None:
        return _scaled(number * scale, "B/s")
    if unit.startswith(("byte", "Kbyte", "Mbyte", "Gbyte", "kbyte")) and (scale := _split(unit.split("/")[0], ("byte",))) is not None:
        per = unit.partition("/")[2]
        return _scaled(number * scale, "B") + (f"/{per}" if per else "")
    if (scale := _split(unit, _TIMES + ("second",))) is not None and unit not in ("",):
        return _duration(number * scale)
    if (scale := _split(unit, _FREQUENCIES)) is not None:
        return _scaled(number * scale, "Hz")
    if unit == "%":
        return f"{_significant(number, 3) if abs(number) < 100 else f'{number:.1f}'} %"
    if not unit:
        return _significant(number)
    head, slash, per = unit.partition("/")
    if head in ("cycle", "warp", "block", "thread", "sector", "register", "cluster", "instruction") and number != 1:
        unit = head + "s" + slash + per
    plural = unit
    return f"{_significant(number)} {plural}"


def shown_value(value, unit: str) -> Shown:
    return Shown(text=in_si(value, unit), raw="–" if value is None else f"{value!r} {unit}".strip())


def shown_spread(variance, n, unit: str) -> Shown:
    """± one standard deviation over the profiled launches, in the value's unit; the recorded
    (population) variance and launch count in the title."""
    number = _number(variance)
    if number is None or number < 0:
        return Shown(text="–", raw="no variance recorded")
    if n == 1:  # one launch profiled (the worker's ncu since 2026-12-01): no spread was measured
        return Shown(text="–", raw="one launch profiled: no spread measured")
    launches = f", {n} launches" if n else ""
    raw = f"variance {variance!r} ({unit or 'unit'}²){launches}"
    if number == 0:
        return Shown(text="± 0", raw=raw)
    return Shown(text="± " + in_si(math.sqrt(number), unit), raw=raw)
