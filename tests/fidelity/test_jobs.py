"""The Job controller and pod lifecycle, as a client sees them."""

from __future__ import annotations

from typing import Any

from tests.fidelity.harness import EXIT_CODE, RUN_FOR, Client, eventually, job_manifest


def _conditions(job: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (job.get("status") or {}).get("conditions") or []}


async def test_job_with_two_completions_completes(kube: Client, namespace: str) -> None:
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    created = await kube.ok("POST", path, job_manifest("two", 2, {RUN_FOR: "1s"}))
    assert created["spec"]["completionMode"] == "NonIndexed"
    assert created["metadata"]["labels"]["job-name"] == "two"

    async def complete() -> dict[str, Any] | None:
        job = await kube.ok("GET", f"{path}/two")
        return job if _conditions(job).get("Complete") == "True" else None

    job = await eventually(complete, "the Job to complete")
    status = job["status"]
    assert status["succeeded"] == 2 and not status.get("failed")
    assert _conditions(job) == {"SuccessCriteriaMet": "True", "Complete": "True"}
    assert status["startTime"] and status["completionTime"]
    pods = await kube.ok(
        "GET", f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": "job-name=two"}
    )
    assert [p["status"]["phase"] for p in pods["items"]] == ["Succeeded", "Succeeded"]
    for pod in pods["items"]:
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "two", True)
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"


async def test_job_whose_pod_fails_past_its_backoff_limit_fails(
    kube: Client, namespace: str
) -> None:
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    await kube.ok("POST", path, job_manifest("bad", 1, {RUN_FOR: "1s", EXIT_CODE: "1"}))

    async def failed() -> dict[str, Any] | None:
        job = await kube.ok("GET", f"{path}/bad")
        return job if _conditions(job).get("Failed") == "True" else None

    job = await eventually(failed, "the Job to fail")
    assert job["status"]["failed"] == 1
    reasons = {c["type"]: c["reason"] for c in job["status"]["conditions"]}
    assert reasons == {"FailureTarget": "BackoffLimitExceeded", "Failed": "BackoffLimitExceeded"}
    pods = await kube.ok(
        "GET", f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": "job-name=bad"}
    )
    assert [p["status"]["phase"] for p in pods["items"]] == ["Failed"]
