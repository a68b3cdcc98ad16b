"""Search benchmark: retrieval quality, text representations, embedding throughput, index
build, query latency at 30,000 and 1,000,000 vectors, UMAP time. Prints figures, asserts nothing.

python bench/bench_search.py [--stages sample,scale,latency,umap] [--rows 30000] [--subset 3000]

- sample:  the 102 real kernels: precision@10 of same-task and same-technique neighbours for
           each text representation and token budget, and the "square matrix multiplication" query.
- scale:   N generated rows (bench/generate_archive.py) imported into a fresh SQLite database,
           then `build_index` timed end to end (embed, store in the database, build the index
           file), then quality over all N; the representations compared on a subset.
- latency: query latency (index search, and query text embedding + search) at N vectors, and at
           1,000,000 (the N real vectors repeated with noise) for the flat and the IVF index.
- umap:    `build_map` over the N stored embeddings.
Goals (issue 4, 2-core machine): N=30,000 embedded and indexed < 6 min; query median < 25 ms at
30k and < 60 ms at 1M; UMAP at 30k < 3 min.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.generate_archive import DEFAULT_SAMPLE, generate, load_sample  # noqa: E402
from kernels.techniques import detect_techniques  # noqa: E402
from search import embedding  # noqa: E402
from search import index as search_index  # noqa: E402

LABELLED_TECHNIQUES = ["shared_memory_tiling", "warp_shuffle", "vectorized_loads", "tensor_cores", "streams"]
TOKEN_BUDGETS = [64, 128, 256]
RESULTS: dict = {}


def report(key: str, value, text: str) -> None:
    RESULTS[key] = value
    print(f"  {text}", flush=True)


def neighbours(vectors: np.ndarray, k: int = 10) -> np.ndarray:
    """For each vector, the positions of its k nearest others (exact search)."""
    index = search_index.new_index(vectors.shape[1], 0)
    index.add_with_ids(vectors, np.arange(len(vectors), dtype=np.int64))
    _, found = index.search(vectors, k + 1)
    rows = []
    for position, row in enumerate(found):
        row = [int(i) for i in row if i != position and i != -1][:k]
        rows.append(row)
    return np.array(rows)


def precision_same(labels: list, hood: np.ndarray) -> float:
    labels = np.asarray(labels, dtype=object)
    return float(np.mean([np.mean(labels[row] == labels[i]) for i, row in enumerate(hood)]))


def precision_technique(tag_sets: list[set], hood: np.ndarray, tag: str):
    """Over kernels that use the technique: the share of their neighbours that use it too."""
    holders = [i for i, tags in enumerate(tag_sets) if tag in tags]
    if not holders:
        return None, 0
    share = [np.mean([tag in tag_sets[j] for j in hood[i]]) for i in holders]
    return float(np.mean(share)), len(holders)


def quality(prefix: str, vectors, task_labels, tag_sets, extra_labels=None) -> None:
    hood = neighbours(vectors)
    report(f"{prefix}.p10_task", precision_same(task_labels, hood),
           f"p@10 same task: {precision_same(task_labels, hood):.3f}")
    for name, labels in (extra_labels or {}).items():
        value = precision_same(labels, hood)
        report(f"{prefix}.p10_{name}", value, f"p@10 same {name}: {value:.3f}")
    base_rates = []
    for tag in LABELLED_TECHNIQUES:
        value, holders = precision_technique(tag_sets, hood, tag)
        rate = sum(tag in tags for tags in tag_sets) / len(tag_sets)
        base_rates.append(rate)
        text = "n/a" if value is None else f"{value:.3f} (base rate {rate:.3f})"
        report(f"{prefix}.p10_{tag}", value, f"p@10 same technique {tag} over {holders} kernels: {text}")


def row_texts(rows, representation: str) -> list[str]:
    make = embedding.REPRESENTATIONS[representation]
    return [make(r["Op_Name"], r["Kernel_Name"], detect_techniques(r["CUDA_Code"]), r["CUDA_Code"]) for r in rows]


def embed(texts, tokens: int):
    model = embedding.load_model()
    model.max_seq_length = tokens
    try:
        started = time.perf_counter()
        vectors = embedding.embed_texts(texts, model=model)
        return vectors, len(texts) / (time.perf_counter() - started)
    finally:
        model.max_seq_length = embedding.EMBEDDING_MAX_TOKENS


def compare_representations(prefix: str, rows, budgets) -> None:
    task_labels = [(r["Level_ID"], r["Task_ID"]) for r in rows]
    source_labels = [r["Op_Name"].split("_", 1)[1] for r in rows]
    tag_sets = [set(detect_techniques(r["CUDA_Code"])) for r in rows]
    for representation in embedding.REPRESENTATIONS:
        for tokens in budgets:
            texts = row_texts(rows, representation)
            vectors, per_second = embed(texts, tokens)
            key = f"{prefix}.{representation}@{tokens}"
            print(f"{key}: {per_second:.1f} kernels/s", flush=True)
            RESULTS[f"{key}.kernels_per_s"] = per_second
            extra = {"source task": source_labels} if len(set(source_labels)) != len(set(task_labels)) else None
            quality(key, vectors, task_labels, tag_sets, extra)
            if prefix == "sample":
                query = embedding.embed_texts([embedding.query_text("square matrix multiplication")])
                order = np.argsort(-(vectors @ query[0]))[:10]
                hits = sum(task_labels[i] == (1, 1) for i in order)
                report(f"{key}.square_matmul_top10", hits, f"'square matrix multiplication': {hits}/10 of top 10 are L1 T1")


def stage_sample(args) -> None:
    print("== sample (102 real kernels)")
    compare_representations("sample", load_sample(DEFAULT_SAMPLE), TOKEN_BUDGETS)


def manage(work: Path, *command) -> float:
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(work / "data"))
    env.pop("DATABASE_URL", None)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", *command], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def stage_scale(args, work: Path, state: dict) -> None:
    print(f"== scale ({args.rows:,} generated kernels, SQLite)")
    rows = list(generate(load_sample(DEFAULT_SAMPLE), args.rows, seed=0))
    if args.reuse:
        print(f"  reusing the database and index built earlier in {work}")
    else:
        build_scale_archive(args, work, rows)
    _scale_quality(args, work, state, rows)


def build_scale_archive(args, work: Path, rows) -> None:
    archive = work / "archive.jsonl"
    archive.write_text("".join(json.dumps(row) + "\n" for row in rows))
    manage(work, "migrate", "-v0")
    seconds = manage(work, "import_archive", str(archive), "--no-progress")
    report("scale.import_s", seconds, f"import: {seconds:.1f} s")
    seconds = manage(work, "build_index", "--no-progress")
    report("scale.build_index_s", seconds,
           f"build_index (embed {args.rows:,} kernels, store, index): {seconds:.1f} s = {seconds / 60:.2f} min, "
           f"{args.rows / seconds:.1f} kernels/s  [goal < 6 min]")
    started = time.perf_counter()
    manage(work, "build_index", "--no-progress")
    report("scale.rebuild_unchanged_s", time.perf_counter() - started,
           f"build_index again (nothing to embed, index rebuilt): {time.perf_counter() - started:.1f} s")


def _scale_quality(args, work: Path, state: dict, rows) -> None:
    _django(work)
    from kernels.models import Kernel
    from search.services import stored_embeddings

    ids, vectors = stored_embeddings()
    meta = {k["id"]: k for k in Kernel.objects.values("id", "task__level", "task__task_number", "task__op_name",
                                                       "technique_tags")}
    started = time.perf_counter()
    search_index.build_index_file(work / "flat.faiss", ids, vectors)
    report("scale.index_build_s", time.perf_counter() - started,
           f"index build alone ({len(ids):,} vectors, flat): {time.perf_counter() - started:.2f} s")
    task_labels = [(meta[i]["task__level"], meta[i]["task__task_number"]) for i in ids]
    source_labels = [meta[i]["task__op_name"].split("_", 1)[1] for i in ids]
    tag_sets = [set(t for t in meta[i]["technique_tags"].split(",") if t) for i in ids]
    print(f"quality over all {len(ids):,} (summary@{embedding.EMBEDDING_MAX_TOKENS}):")
    quality("scale.summary", vectors, task_labels, tag_sets, {"source task": source_labels})
    state.update(ids=ids, vectors=vectors)
    if args.subset:
        print(f"representations on the first {args.subset:,} generated kernels:")
        compare_representations(f"subset{args.subset}", rows[:args.subset], [64, 128])


def _django(work: Path) -> None:
    os.environ["ARCHIVE_DATA_DIR"] = str(work / "data")
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archive_site.settings")
    import django

    django.setup()


def timed_queries(search, queries) -> list[float]:
    search(queries[0])  # warm up
    times = []
    for query in queries:
        started = time.perf_counter()
        search(query)
        times.append((time.perf_counter() - started) * 1000)
    return times


def latency_line(key: str, times: list[float], goal: str) -> None:
    median, p95 = statistics.median(times), float(np.percentile(times, 95))
    report(key, {"median_ms": median, "p95_ms": p95}, f"{key}: median {median:.1f} ms, p95 {p95:.1f} ms  {goal}")


def stage_latency(args, work: Path, state: dict) -> None:
    print("== query latency")
    from search import selectors, storage

    vectors = state["vectors"]
    rng = np.random.default_rng(1)
    picks = rng.choice(len(vectors), 200, replace=False)
    reader = storage.index_reader()
    latency_line(f"latency.index_{len(vectors)}", timed_queries(lambda q: reader.search(q, 10), vectors[picks]),
                 "(index search, k=10)")
    texts = ["square matrix multiplication", "warp shuffle reduction", "tiled matmul with shared memory",
             "conv2d relu bias add fused", "vectorized float4 loads", "multi layer perceptron"] * 5
    latency_line(f"latency.site_{len(vectors)}", timed_queries(lambda q: selectors.search_kernels(query=q, limit=20),
                                                               texts),
                 "(search_kernels: embed the query text, search, read 20 kernels)  [goal < 25 ms at 30k]")
    latency_line("latency.embed_query", timed_queries(lambda q: embedding.embed_texts([q]), texts),
                 "(embedding the query text alone)")

    target = args.million
    copies = -(-target // len(vectors))
    big = np.tile(vectors, (copies, 1))[:target]
    big += rng.standard_normal(big.shape, dtype=np.float32) * (0.15 / np.sqrt(big.shape[1]))
    big /= np.linalg.norm(big, axis=1, keepdims=True)
    queries = big[rng.choice(len(big), 100, replace=False)]
    flat = search_index.new_index(big.shape[1], search_index.FLAT_LIMIT)
    started = time.perf_counter()
    flat.add_with_ids(big, np.arange(len(big), dtype=np.int64))
    report("latency.flat_1m_build_s", time.perf_counter() - started,
           f"flat index of {len(big):,}: add {time.perf_counter() - started:.1f} s")
    latency_line(f"latency.flat_{len(big)}", timed_queries(lambda q: flat.search(q[None], 10), queries),
                 "(exact flat index)  [goal < 60 ms at 1M]")
    started = time.perf_counter()
    ivf = search_index.new_index(big.shape[1], len(big), training_vectors=big)
    trained = time.perf_counter() - started
    ivf.add_with_ids(big, np.arange(len(big), dtype=np.int64))
    report("latency.ivf_1m_build_s", time.perf_counter() - started,
           f"IVF index of {len(big):,} ({ivf.nlist} cells, nprobe {ivf.nprobe}): train {trained:.1f} s, "
           f"train+add {time.perf_counter() - started:.1f} s")
    latency_line(f"latency.ivf_{len(big)}", timed_queries(lambda q: ivf.search(q[None], 10), queries),
                 "(IVF index, what build_index writes above FLAT_LIMIT)  [goal < 60 ms at 1M]")
    _, exact = flat.search(queries, 10)
    _, approximate = ivf.search(queries, 10)
    recall = float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact)]))
    report("latency.ivf_recall10", recall, f"IVF recall@10 against exact search: {recall:.3f}")


def stage_umap(args, work: Path) -> None:
    print("== map")
    seconds = manage(work, "build_map", "--no-progress")
    report("umap.build_map_s", seconds, f"build_map over {args.rows:,} embeddings: {seconds:.1f} s  [goal < 180 s]")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="sample,scale,latency,umap")
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--subset", type=int, default=3000, help="generated kernels to compare representations on")
    parser.add_argument("--million", type=int, default=1_000_000)
    parser.add_argument("--reuse", type=Path, default=None,
                        help="a work folder of an earlier run (its data/ database and index): skip import and build_index")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "bench_search.json")
    args = parser.parse_args(argv)
    stages = set(args.stages.split(","))
    state: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_search_") as folder:
        work = args.reuse or Path(folder)
        if "sample" in stages:
            stage_sample(args)
        if stages & {"scale", "latency", "umap"}:
            stage_scale(args, work, state)
        if "latency" in stages:
            stage_latency(args, work, state)
        if "umap" in stages:
            stage_umap(args, work)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(RESULTS, indent=1, default=str))
    print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
