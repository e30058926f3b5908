"""The manager's REST API (/api/v1, bearer token) as `mkq ctl` reads it across clusters."""

from __future__ import annotations

from typing import Any

import httpx

from mkq.ctl.errors import CtlError

JsonObject = dict[str, Any]


class ManagerApi:
    """Reads of /api/v1/workloads, /queues and /clusters; errors become CtlError with the
    manager's own message."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)
        self._url = url

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: dict[str, str] | None = None) -> JsonObject:
        try:
            response = self._client.get(f"/api/v1{path}", params=params)
        except httpx.HTTPError as error:
            raise CtlError(f"manager {self._url}: {error}") from error
        if response.status_code >= 400:
            try:
                body = response.json().get("error") or {}
            except ValueError:
                body = {}
            message = body.get("message") or response.text[:300]
            raise CtlError(f"manager {self._url}: {response.status_code} {message}")
        result = response.json()
        return result if isinstance(result, dict) else {}

    def list_all(self, path: str, params: dict[str, str] | None = None) -> list[JsonObject]:
        """Every item of a list, following its continue tokens."""
        items: list[JsonObject] = []
        query = dict(params or {})
        while True:
            page = self.get(path, query)
            items.extend(page.get("items") or [])
            token = page.get("continue")
            if not token:
                return items
            query["continue"] = str(token)
