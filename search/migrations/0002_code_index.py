"""The code index (search/code_index.py): SQLite FTS5 trigram table with its triggers, or the
PostgreSQL pg_trgm GIN index on the kernels' code. Not a model: raw DDL per database."""
from django.db import migrations


def create(apps, schema_editor):
    from search.code_index import create_code_index

    create_code_index(schema_editor.connection)


def drop(apps, schema_editor):
    from search.code_index import drop_code_index

    drop_code_index(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ("kernels", "0001_initial"),
        ("search", "0001_initial"),
    ]

    operations = [migrations.RunPython(create, drop)]
