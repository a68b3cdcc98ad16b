"""Reading kernel archives: file containers, row schemas and profile literals.

Nothing here touches the database: readers yield rows, schemas turn a row into
records or a list of errors, and services.py writes the records.
"""
