"""The manager's REST API (FastAPI): one router per resource under /api/v1."""
