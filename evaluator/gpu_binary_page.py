"""The kernel page's "What the GPU ran" panel (templates/evaluator/_gpu_binary.html): the
worker's listing of the kernel's build (verifier/gpu_binary.py), shaped for the page, and why
there is none when there is none. Registered in evaluator/apps.py; reads through
evaluator/selectors.py; everything else here is pure shaping of the stored listing.

Every text in a listing (names, SASS, PTX, source lines) comes out of the candidate's binary:
the template escapes all of it; nothing here marks anything safe."""
import re

from . import selectors

SASS_LINES_ON_PAGE = 500  # a function's SASS beyond this is in the full text listing
PTX_LINES_ON_PAGE = 300
# ncu's warp-stall reasons as its source page names them (Nsight Compute's "Warp State" docs).
STALL_REASONS = {
    "long_sb": "waiting for a global, local or texture memory result (L1TEX: the long scoreboard)",
    "short_sb": "waiting for a shared memory or special-function result (the short scoreboard)",
    "mio": "the memory input/output queue is full (shared memory, special math, dynamic branches)",
    "barrier": "waiting at a barrier (__syncthreads) for the block's other warps",
    "membar": "waiting at a memory fence",
    "wait": "a fixed-latency dependency on the previous instruction",
    "math": "the math pipe it needs is busy",
    "not_selected": "ready, but the scheduler issued another warp",
    "selected": "issuing (not a stall)",
    "no_inst": "no instruction fetched yet (instruction cache)",
    "branch_resolving": "waiting for a branch target to be computed",
    "dispatch": "the dispatcher held it back",
    "drain": "draining memory stores at exit",
    "lg": "the local/global memory queue is full",
    "tex": "the texture queue is full",
    "imc": "a constant cache miss",
    "sleep": "sleeping (__nanosleep)",
    "misc": "another reason",
}
_INSTRUCTION = re.compile(r"^/\*([0-9a-f]{4,})\*/ (@!?U?P\w+ )?(\S+)(.*)$")
_MARKER = re.compile(r"^//## (.+):(\d+)$")


def gpu_binary_panel(kernel, page: dict) -> dict:
    """Panel context: {"gpu_binary": the view}. The listing comes from the profiles the page
    read with the kernel, and the page's own verifications say why a kernel has none: no query
    of its own."""
    profile = selectors.kernel_gpu_binary_of(kernel)
    return {"gpu_binary": gpu_binary_view(profile, code=kernel.code, verifications=page.get("verifications") or [])}


def gpu_binary_view(profile, *, code: str, verifications) -> dict:
    if profile is None:
        return {"listed": False, "why": why_no_listing(verifications)}
    listing = profile.parsed if isinstance(profile.parsed, dict) else {}
    if listing.get("unavailable"):
        return {"listed": False, "profile": profile,
                "why": "the worker built it for the GPU but could not list the binary: %s." % listing["unavailable"]}
    code_lines = code.count("\n") + 1
    hot = listing.get("hot_spots") if isinstance(listing.get("hot_spots"), dict) else {}
    functions = [_function_view(index, row, hot, code_lines)
                 for index, row in enumerate(listing.get("functions") or []) if isinstance(row, dict)]
    tools = listing.get("tools") or {}
    release = ((tools.get("cuobjdump") or {}).get("version") or "").strip()
    return {
        "listed": True, "profile": profile, "functions": functions,
        "arch": ", ".join(listing.get("arch") or []), "toolkit": release,
        "sass_tool": listing.get("sass_tool") or "cuobjdump -sass",
        "spills_from_ptxas": bool(tools.get("ptxas")),
        "problems": listing.get("problems") or [],
        "hot_spots_error": hot.get("error") if hot else None,
        "hot_spots_command": hot.get("command") if hot else None,
        "has_hot_spots": any(function["hot"] for function in functions),
    }


def why_no_listing(verifications) -> str:
    """Plainly, why this kernel has no listing of its GPU binary."""
    finished = [v for v in verifications if v.status not in ("queued", "running")]
    ours = [v for v in finished if v.origin == "worker"]
    if any(v.device == "cuda" for v in ours):
        return ("no listing was kept from its GPU runs here (they predate listings, their build failed, or the "
                "worker that ran them lists no binaries)")
    if ours:
        return ("it has only been re-verified on the CPU here (this site's worker has no GPU), and a CPU build "
                "holds no GPU code")
    if finished:
        return ("its GPU results came as signed records from another verifier, and records carry no binary; "
                "a re-verification on this site's GPU worker keeps one")
    return "it has not been built on this site's GPU worker yet: the listing is kept when a GPU worker re-verifies it"


def _function_view(index: int, row: dict, hot: dict, code_lines: int) -> dict:
    line_map = row.get("line_map") if isinstance(row.get("line_map"), dict) else {}
    hot_kernel = next((k for k in hot.get("kernels") or [] if _same_function(k.get("function"), row.get("name"))),
                      None)
    heat = {spot.get("offset"): spot.get("share") for spot in (hot_kernel or {}).get("hot_instructions") or []}
    anchor = "gpu-fn-%d" % index
    sass_all = str(row.get("sass") or "").splitlines()
    sass = [_sass_line(text, anchor, line_map, code_lines, heat) for text in sass_all[:SASS_LINES_ON_PAGE]]
    ptx_all = str(row.get("ptx") or "").splitlines()
    view = {key: row.get(key) for key in (
        "name", "mangled", "arch", "registers", "shared_bytes", "stack_bytes", "local_bytes", "spill_store_bytes",
        "spill_load_bytes", "local_loads", "local_stores", "barriers", "instructions")}
    constant = row.get("constant_bytes") if isinstance(row.get("constant_bytes"), dict) else {}
    view.update(
        anchor=anchor, entry=bool(row.get("entry")), constant_bytes=sum(v for v in constant.values()
                                                                          if isinstance(v, int)) if constant else None,
        spills=bool(row.get("spill_store_bytes") or row.get("spill_load_bytes")),
        shared_text=_size(row.get("shared_bytes")),
        sass=sass, sass_total=row.get("sass_lines") or len(sass_all), sass_stored=len(sass_all),
        ptx="\n".join(ptx_all[:PTX_LINES_ON_PAGE]), ptx_shown=min(len(ptx_all), PTX_LINES_ON_PAGE),
        ptx_total=row.get("ptx_lines") or len(ptx_all),
        hot=_hot_view(hot_kernel, anchor, line_map, code_lines) if hot_kernel else None,
    )
    return view


def _sass_line(text: str, anchor: str, line_map: dict, code_lines: int, heat: dict) -> dict:
    if match := _INSTRUCTION.match(text):
        offset = match.group(1)
        return {"kind": "ins", "offset": offset, "pred": (match.group(2) or "").strip(), "op": match.group(3),
                "args": match.group(4), "id": "%s-%s" % (anchor, offset), "heat": _percent(heat.get(offset))}
    if match := _MARKER.match(text):
        where, line = match.group(1), int(match.group(2))
        mapped = _kernel_line(where, line, line_map, code_lines)
        return {"kind": "line", "line": mapped, "where": "%s:%s" % (where, line)}
    return {"kind": "other", "text": text}


def _hot_view(kernel: dict, anchor: str, line_map: dict, code_lines: int) -> dict:
    where = kernel.get("file") or ""
    instructions = []
    for spot in kernel.get("hot_instructions") or []:
        samples = spot.get("samples") or 0
        stalls = spot.get("stalls") if isinstance(spot.get("stalls"), dict) else {}
        instructions.append({
            "offset": spot.get("offset"), "sass": spot.get("sass"), "share": _percent(spot.get("share")),
            "id": "%s-%s" % (anchor, spot.get("offset")), "samples": samples,
            "line": _kernel_line(where, spot.get("line"), line_map, code_lines),
            "stalls": ", ".join("%s %d%%" % (reason, round(100 * count / samples)) for reason, count in stalls.items()
                                if samples),
        })
    lines = [{"line": _kernel_line(where, spot.get("line"), line_map, code_lines), "file_line": spot.get("line"),
              "source": spot.get("source"), "share": _percent(spot.get("share"))}
             for spot in kernel.get("hot_lines") or []]
    seen = sorted({reason for spot in kernel.get("hot_instructions") or [] for reason in (spot.get("stalls") or {})})
    return {"instructions": instructions, "lines": lines, "total_samples": kernel.get("total_samples"),
            "launches": kernel.get("launches"), "where": where,
            "reasons": [(reason, STALL_REASONS.get(reason, "")) for reason in seen]}


def _kernel_line(where: str, line, line_map: dict, code_lines: int) -> int | None:
    """The kernel's own line for a line of ``where`` (None when that file is not the kernel's)."""
    if not isinstance(line, int) or not isinstance(line_map.get(where), int):
        return None
    mapped = line + line_map[where]
    return mapped if 1 <= mapped <= code_lines else None


def _size(count) -> str:
    """Bytes as "0 B", "864 B", "9.1 KiB"; "–" when not known."""
    if not isinstance(count, int):
        return "–"
    return "%d B" % count if count < 1024 else "%.1f KiB" % (count / 1024)


def _percent(share) -> str | None:
    return None if not isinstance(share, (int, float)) else "%.1f%%" % (100 * share)


def _same_function(profiled, listed) -> bool:
    """ncu and cu++filt write one function's name alike, but templates may differ ("<96>" against
    "<(int)96>"): compare the whole names, else the names before their arguments."""
    if not profiled or not listed:
        return False

    def bare(name):
        return re.sub(r"^void ", "", re.sub(r"\s+", "", str(name)))

    return bare(profiled) == bare(listed) or bare(profiled).split("(")[0].split("<")[0] == \
        bare(listed).split("(")[0].split("<")[0]


def listing_text(listing: dict) -> str:
    """The whole stored listing as plain text (the page shows the first lines of each function)."""
    tools = listing.get("tools") or {}
    out = ["# What the GPU ran: %s, %s (%s)" % (", ".join(listing.get("arch") or []), listing.get("sass_tool") or "",
                                                (tools.get("cuobjdump") or {}).get("version") or "")]
    for row in listing.get("functions") or []:
        out += ["", "#" * 80, "# %s" % row.get("name"), "# %s" % row.get("mangled"),
                "# registers %s, shared %s B, stack %s B, local %s B, spill stores %s B, spill loads %s B" % tuple(
                    row.get(key) for key in ("registers", "shared_bytes", "stack_bytes", "local_bytes",
                                             "spill_store_bytes", "spill_load_bytes")),
                "", "## SASS (%s lines)" % row.get("sass_lines"), str(row.get("sass") or ""),
                "", "## PTX (%s lines)" % row.get("ptx_lines"), str(row.get("ptx") or "")]
    return "\n".join(out) + "\n"
