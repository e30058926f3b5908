"""Leader election judges expiry by how long it has seen the same lease record, not by clocks."""

from worker_agent.leader import LeaderElector


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lease(holder: str, renewed: str) -> dict:
    return {"spec": {"holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": 15}}


def elector(clock: Clock) -> LeaderElector:
    return LeaderElector(None, "default", "lease", "me", monotonic=clock)  # type: ignore[arg-type]


def test_a_lease_renewed_by_another_holder_is_respected() -> None:
    clock = Clock()
    me = elector(clock)
    assert me._held_by_other(lease("other", "t1"))
    clock.now += 14
    assert me._held_by_other(lease("other", "t1"))
    clock.now += 14
    assert me._held_by_other(lease("other", "t2"))  # renewed meanwhile: a fresh 15 s


def test_a_lease_left_unrenewed_for_its_duration_has_expired() -> None:
    clock = Clock()
    me = elector(clock)
    assert me._held_by_other(lease("other", "t1"))
    clock.now += 15
    assert not me._held_by_other(lease("other", "t1"))


def test_a_released_or_own_lease_is_free() -> None:
    me = elector(Clock())
    assert not me._held_by_other(lease("", "t1"))
    assert not me._held_by_other(lease("me", "t1"))
