"""PostgreSQL serves "highest speedup first, nulls last" (the leaderboard's order) only from
an index in that order. SQLite cannot declare NULLS LAST in an index, and does not need it."""
from django.db import migrations

INDEXES = {
    "kernel_native_desc": "claimed_speedup_native",
    "kernel_compile_desc": "claimed_speedup_compile",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{name}" ON "kernels_kernel" ("{column}" DESC NULLS LAST, "id")'
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


class Migration(migrations.Migration):
    dependencies = [("kernels", "0002_verified_state_and_list_indexes")]
    operations = [migrations.RunPython(create, drop)]
