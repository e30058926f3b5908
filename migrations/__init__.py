"""Alembic environment and revisions of the manager's database (run by `mkq manager migrate`)."""
