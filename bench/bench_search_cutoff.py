"""Search relevance cut-off and code search, measured on the sample. Prints figures, asserts nothing.

python bench/bench_search_cutoff.py [--archives A.jsonl,B.jsonl] [--json OUT]

Imports the archives (default: the shared sample, 102 real kernels, when ../shared is there, and
the repository's demo archive, 14 kernels: what `make demo` serves) into a fresh SQLite database,
builds the search index, then:

- for labelled queries (a query and the tasks whose kernels answer it, by op name), the precision
  and recall of semantic search for each cut-off rule (a floor, and a gap from the query's best
  hit), averaged over the queries, the figures of the site's rule (search/results.py:
  MIN_SIMILARITY, MAX_GAP_FROM_BEST, chosen from this table) and the precision of the old
  behaviour (the top 20, no cut-off);
- code search: for identifiers and regular expressions, whether the hits are exactly the kernels
  whose code contains / matches them (checked against a scan), and the query times.
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED_SAMPLE = REPO.parent / "shared" / "data" / "sakana_archive_subset.jsonl"
DEMO_ARCHIVE = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"

# Query -> op-name pattern of the tasks whose kernels are the right answers.
LABELLED_QUERIES = {
    "softmax": r"softmax",
    "row-wise softmax with warp shuffle reductions": r"softmax",
    "square matrix multiplication": r"square_(matrix_multiplication|matmul)",
    "matrix multiplication": r"matrix_multiplication|matmul",
    "tiled matmul with shared memory": r"matrix_multiplication|matmul",
    "elementwise ReLU": r"^\d+_relu_demo$",
    "2D convolution with ReLU and bias add": r"conv2d",
    "convolution": r"conv2d",
    "multi-layer perceptron": r"mlp",
    "linear layer followed by ReLU": r"linear_relu|mlp",
    "fully connected layers": r"linear|mlp",
}
# The cut-off keeps a hit whose similarity is at least FLOOR and within GAP of the query's best
# hit: similarities of right answers differ by query (a one-word query scores lower than a
# description), so a fixed floor alone either lets noise in or drops whole queries.
FLOORS = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45]
GAPS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 1.0]
CODE_QUERIES = {"exact": ["__shfl_xor_sync", "__shfl_down_sync", "__syncthreads", "float4", "cudaStream_t"],
                "regex": [r"__shfl_(xor|down)_sync", r"__launch_bounds__\(\d+", r"(?i)wmma::\w+", r"atomicAdd\("]}


def setup(work: Path, archives: list[Path]) -> None:
    os.environ["ARCHIVE_DATA_DIR"] = str(work / "data")
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archive_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    for archive in archives:
        call_command("import_archive", str(archive), "--no-progress", stdout=open(os.devnull, "w"))
    call_command("build_index", "--no-progress", stdout=open(os.devnull, "w"))


def semantic_figures() -> dict:
    from kernels.models import Kernel
    from search import selectors
    from search.results import MAX_GAP_FROM_BEST, MIN_SIMILARITY

    op_of = dict(Kernel.objects.values_list("id", "task__op_name"))
    per_query = {}
    for query, relevant_pattern in LABELLED_QUERIES.items():
        relevant = {i for i, op in op_of.items() if re.search(relevant_pattern, op, re.I)}
        hits = selectors.search_kernels(query=query, limit=len(op_of)).hits  # every kernel, scored
        # Folded copies count as shown: a hit stands for its identical kernels.
        per_query[query] = {"relevant": len(relevant),
                            "scored": [(hit.similarity, hit.kernel_id in relevant, 1 + hit.duplicates_folded)
                                       for hit in hits]}
    rows = [_figures(per_query, floor, gap) for floor in FLOORS for gap in GAPS]
    top20 = [sum(n for _, ok, n in figures["scored"][:20] if ok) / max(1, sum(n for *_, n in figures["scored"][:20]))
             for figures in per_query.values()]
    best = max(rows, key=lambda row: (round(row["f1"], 3), row["precision"]))
    site = _figures(per_query, MIN_SIMILARITY, MAX_GAP_FROM_BEST)
    return {"queries": len(per_query), "kernels": len(op_of), "by_cutoff": rows, "best": best, "site": site,
            "top20_precision_no_cutoff": statistics.fmean(top20),
            "per_query_at_site": {q: _at(f, site["floor"], site["gap"]) for q, f in per_query.items()},
            "scored": per_query}


def _kept(scored, floor: float, gap: float):
    """The rule of search/results.py: at least `floor`, and within `gap` of the query's best hit."""
    top = scored[0][0] if scored else 0.0
    return [(ok, n) for similarity, ok, n in scored if similarity >= floor and similarity >= top - gap]


def _figures(per_query: dict, floor: float, gap: float) -> dict:
    """Macro-averaged precision and recall (each query counts the same, whether 3 or 39 kernels
    answer it) and the micro-averaged precision (all shown hits pooled)."""
    precisions, recalls, shown_all, good_all = [], [], 0, 0
    for figures in per_query.values():
        kept = _kept(figures["scored"], floor, gap)
        shown = sum(n for _, n in kept)
        good = sum(n for ok, n in kept if ok)
        precisions.append(good / shown if shown else 0.0)  # nothing shown for a query that has answers
        recalls.append(good / figures["relevant"] if figures["relevant"] else 1.0)
        shown_all, good_all = shown_all + shown, good_all + good
    precision, recall = statistics.fmean(precisions), statistics.fmean(recalls)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"floor": floor, "gap": gap, "shown": shown_all, "precision": precision, "recall": recall, "f1": f1,
            "micro_precision": good_all / shown_all if shown_all else 0.0}


def _at(figures: dict, floor: float, gap: float) -> str:
    kept = _kept(figures["scored"], floor, gap)
    good = sum(n for ok, n in kept if ok)
    return f"{good}/{sum(n for _, n in kept)} shown relevant, {good}/{figures['relevant']} relevant found"


def code_figures() -> dict:
    from kernels.models import Kernel
    from search.results import search_page

    codes = dict(Kernel.objects.values_list("id", "code"))
    figures = {}
    for mode, queries in CODE_QUERIES.items():
        for query in queries:
            if mode == "exact":
                expected = {i for i, code in codes.items() if query in code}
            else:
                compiled = re.compile(query, re.M)
                expected = {i for i, code in codes.items() if compiled.search(code)}
            times, found = [], set()
            for _ in range(5):
                started = time.perf_counter()
                page = search_page(query=query, mode=mode, page_size=100)
                times.append((time.perf_counter() - started) * 1000)
            for number in range(1, page.page.paginator.num_pages + 1):
                found |= {hit.kernel_id for hit in search_page(query=query, mode=mode, page_size=100, page=number).hits}
            figures[f"{mode} {query}"] = {"expected": len(expected), "found": len(found), "exact": found == expected,
                                          "median_ms": statistics.median(times)}
    return figures


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = ",".join(str(p) for p in (SHARED_SAMPLE, DEMO_ARCHIVE) if p.exists())
    parser.add_argument("--archives", default=default)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "bench_search_cutoff.json")
    args = parser.parse_args(argv)
    archives = [Path(p) for p in args.archives.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="bench_cutoff_") as folder:
        started = time.perf_counter()
        setup(Path(folder), archives)
        print(f"imported and indexed {', '.join(p.name for p in archives)} in {time.perf_counter() - started:.0f} s")
        semantic = semantic_figures()
        print(f"== semantic search: {semantic['queries']} labelled queries over {semantic['kernels']} kernels")
        print("  floor  gap  shown  precision  recall    F1  pooled precision   (per-query means; gap 1.00: none)")
        for row in semantic["by_cutoff"]:
            print(f"  {row['floor']:5.2f} {row['gap']:4.2f} {row['shown']:6d} {row['precision']:10.3f} "
                  f"{row['recall']:7.3f} {row['f1']:6.3f} {row['micro_precision']:10.3f}")
        best, site = semantic["best"], semantic["site"]
        print(f"  best F1: floor {best['floor']:.2f}, gap {best['gap']:.2f}: precision {best['precision']:.3f}, "
              f"recall {best['recall']:.3f}")
        print(f"  the site's cut-off (search/results.py: floor {site['floor']:.2f}, gap {site['gap']:.2f}): "
              f"precision {site['precision']:.3f}, recall {site['recall']:.3f}, F1 {site['f1']:.3f}, "
              f"pooled precision {site['micro_precision']:.3f}; without a cut-off the top 20 had precision "
              f"{semantic['top20_precision_no_cutoff']:.3f}")
        for query, line in semantic["per_query_at_site"].items():
            print(f"    {query!r}: {line}")
        code = code_figures()
        print("== code search (hits vs a scan of every kernel's code)")
        for query, row in code.items():
            print(f"  {query}: {row['found']} found, {row['expected']} expected, "
                  f"{'exact' if row['exact'] else 'DIFFERENT'}, median {row['median_ms']:.1f} ms")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"semantic": semantic, "code": code}, indent=1, default=str))
    print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
