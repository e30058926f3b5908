"""The informer cache: watch events and relists applied to a local store."""

from worker_agent.cache import Change, ObjectCache, object_key


def obj(name: str, rv: str, namespace: str | None = "ns", **extra: object) -> dict:
    meta: dict = {"name": name, "resourceVersion": rv}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, **extra}


def test_keys_are_namespace_slash_name_or_bare_name() -> None:
    assert object_key(obj("a", "1")) == "ns/a"
    assert object_key(obj("flavor", "1", namespace=None)) == "flavor"


def test_replaying_an_event_changes_nothing() -> None:
    cache = ObjectCache()
    assert cache.apply("ADDED", obj("a", "5")) is not None
    assert cache.apply("ADDED", obj("a", "5")) is None
    assert cache.apply("MODIFIED", obj("a", "5")) is None


def test_an_older_version_never_overwrites_a_newer_one() -> None:
    cache = ObjectCache()
    cache.upsert(obj("a", "7", spec={"x": 2}))
    assert cache.apply("MODIFIED", obj("a", "6", spec={"x": 1})) is None
    assert cache.get("ns/a")["spec"] == {"x": 2}


def test_deletion_removes_and_reports_the_last_state() -> None:
    cache = ObjectCache()
    cache.apply("ADDED", obj("a", "1"))
    change = cache.apply("DELETED", obj("a", "2"))
    assert change == Change("ns/a", obj("a", "1"), None)
    assert "ns/a" not in cache
    assert cache.apply("DELETED", obj("a", "2")) is None


def test_a_relist_reports_only_the_differences() -> None:
    cache = ObjectCache()
    cache.replace([obj("a", "1"), obj("b", "1")], "10")
    changes = cache.replace([obj("a", "1"), obj("b", "3"), obj("c", "4")], "20")
    assert sorted((c.key, c.old is None, c.new is None) for c in changes) == [
        ("ns/b", False, False),
        ("ns/c", True, False),
    ]
    gone = cache.replace([obj("c", "4")], "30")
    assert sorted(c.key for c in gone) == ["ns/a", "ns/b"]
    assert cache.resource_version == "30"


def test_bookmarks_move_the_resume_version_only() -> None:
    cache = ObjectCache()
    cache.replace([obj("a", "1")], "10")
    assert cache.apply("BOOKMARK", {"metadata": {"resourceVersion": "99"}}) is None
    assert cache.resource_version == "99"
    assert len(cache) == 1


def test_indexes_follow_updates_and_deletions() -> None:
    cache = ObjectCache()
    cache.add_index("queue", lambda o: [o.get("spec", {}).get("queue", "")])
    cache.apply("ADDED", obj("a", "1", spec={"queue": "q1"}))
    cache.apply("ADDED", obj("b", "1", spec={"queue": "q1"}))
    cache.apply("MODIFIED", obj("b", "2", spec={"queue": "q2"}))
    assert [object_key(o) for o in cache.by_index("queue", "q1")] == ["ns/a"]
    cache.apply("DELETED", obj("a", "3"))
    assert cache.by_index("queue", "q1") == []
    assert [object_key(o) for o in cache.by_index("queue", "q2")] == ["ns/b"]


def test_a_snapshot_does_not_see_later_changes() -> None:
    cache = ObjectCache()
    cache.apply("ADDED", obj("a", "1"))
    snapshot = cache.snapshot()
    cache.apply("ADDED", obj("b", "1"))
    cache.apply("DELETED", obj("a", "2"))
    assert list(snapshot) == ["ns/a"]
