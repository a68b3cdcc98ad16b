"""The demo builder's work dir: one JSON file per (entry, step), written atomically, so what
is done survives a cut-off run and a re-run resumes (evaluator/demo_archive/build.py). No Django."""
import json
import os
import tempfile

LOG_LIMIT = 1500


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(obj, fh, indent=1, default=str)
    os.replace(tmp, path)


class State:
    """One JSON file per (entry, step) under the work dir: what is done survives a cut-off run."""

    def __init__(self, work):
        self.work = work

    def path(self, name, step):
        return os.path.join(self.work, name, step + ".json")

    def get(self, name, step):
        try:
            with open(self.path(name, step)) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def put(self, name, step, doc):
        write_json(self.path(name, step), doc)


def trim(doc, limit=LOG_LIMIT):
    """A result document with its log cut to its last ``limit`` characters."""
    if not isinstance(doc, dict):
        return doc
    doc = dict(doc)
    if "log" in doc:
        doc["log"] = (doc.get("log") or "")[-limit:]
    return doc
