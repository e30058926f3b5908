"""The manager's store: tables, the engine and sessions, and queries as functions."""
