"""The code index: which kernels contain a piece of text, answered by an index, not by reading
every kernel's code.

- SQLite: an FTS5 table with the trigram tokenizer over kernels_kernel.code. It is an
  external-content table (it stores trigrams, not a second copy of the code) kept current by
  triggers on the kernel table, so every writer (imports, the admin, tests) updates it.
- PostgreSQL: a GIN pg_trgm index on kernels_kernel.code, which LIKE and ILIKE use.

Both look up runs of at least 3 characters; the exact check (case, regular expression) runs
after, on the kernels returned (search/code_search.py).

Why the post_migrate hook (search/apps.py): on SQLite, Django alters a table by copying it into
a new one and dropping the old, which drops its triggers; after any migration the triggers are
put back and, if they were missing, the index is rebuilt from the kernel table.
"""
from django.db.models.expressions import RawSQL

KERNEL_TABLE = "kernels_kernel"
FTS_TABLE = "search_kernel_code_fts"
PG_INDEX = "search_kernel_code_trgm"
_TRIGGERS = {
    "search_kernel_code_ai": f"""CREATE TRIGGER IF NOT EXISTS search_kernel_code_ai AFTER INSERT ON {KERNEL_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}(rowid, code) VALUES (new.id, new.code); END""",
    "search_kernel_code_ad": f"""CREATE TRIGGER IF NOT EXISTS search_kernel_code_ad AFTER DELETE ON {KERNEL_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, code) VALUES ('delete', old.id, old.code); END""",
    "search_kernel_code_au": f"""CREATE TRIGGER IF NOT EXISTS search_kernel_code_au AFTER UPDATE OF code, id ON {KERNEL_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, code) VALUES ('delete', old.id, old.code);
        INSERT INTO {FTS_TABLE}(rowid, code) VALUES (new.id, new.code); END""",
}


def create_code_index(connection) -> None:
    """Create the index (migration search 0002); fills it from the kernels already there."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
                           f"code, content='{KERNEL_TABLE}', content_rowid='id', tokenize='trigram')")
            for sql in _TRIGGERS.values():
                cursor.execute(sql)
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
        elif connection.vendor == "postgresql":
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            cursor.execute(f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {KERNEL_TABLE} USING gin (code gin_trgm_ops)")


def drop_code_index(connection) -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for name in _TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")
        elif connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")


def restore_code_index(connection) -> bool:
    """Put back what a table rebuild dropped (SQLite triggers; the PostgreSQL index); True when
    something was missing and the index was rebuilt. A no-op before migration 0002."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT type, name FROM sqlite_master WHERE name = %s OR name IN (%s, %s, %s)",
                           [FTS_TABLE, *_TRIGGERS])
            present = {name for _, name in cursor.fetchall()}
        if FTS_TABLE not in present or present >= {FTS_TABLE, *_TRIGGERS}:
            return False
        create_code_index(connection)  # triggers back, then a full rebuild from the kernel table
        return True
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [PG_INDEX])
            if cursor.fetchone() is None and _migration_applied(connection):
                create_code_index(connection)
                return True
    return False


def _migration_applied(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM django_migrations WHERE app = 'search' AND name LIKE '0002_%%'")
        return cursor.fetchone() is not None


def kernels_containing(queryset, clauses: list[frozenset[str]], *, case_insensitive: bool, connection):
    """The kernels of `queryset` whose code contains, for every clause, one of its literals,
    found through the index. On SQLite the index ignores case (a superset: the caller checks
    case); on PostgreSQL LIKE is exact and ILIKE used when the pattern ignores case."""
    if connection.vendor == "sqlite":
        match = " AND ".join("(" + " OR ".join(_fts_phrase(lit) for lit in sorted(clause)) + ")" for clause in clauses)
        return queryset.filter(id__in=RawSQL(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [match]))
    operator = "ILIKE" if case_insensitive else "LIKE"
    where, params = [], []
    for clause in clauses:
        where.append("(" + " OR ".join(f"code {operator} %s" for _ in clause) + ")")
        params += ["%" + _like_escaped(literal) + "%" for literal in sorted(clause)]
    return queryset.filter(id__in=RawSQL(f"SELECT id FROM {KERNEL_TABLE} WHERE " + " AND ".join(where), params))


def _like_escaped(literal: str) -> str:
    return literal.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _fts_phrase(literal: str) -> str:
    # An FTS5 string: double quotes doubled. With the trigram tokenizer a phrase of 3 or more
    # characters matches wherever the text contains it.
    return '"' + literal.replace('"', '""') + '"'
