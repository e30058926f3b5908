"""Job integrations: one module per job kind behind the `JobIntegration` interface."""

from worker_agent.integrations.base import Finish, JobIntegration, PodSetInfo
from worker_agent.integrations.job import BatchJobIntegration
from worker_agent.integrations.jobset import JobSetIntegration

__all__ = [
    "BatchJobIntegration",
    "Finish",
    "JobIntegration",
    "JobSetIntegration",
    "PodSetInfo",
    "default_integrations",
]


def default_integrations() -> list[JobIntegration]:
    """The integrations the agent runs unless told otherwise."""
    return [BatchJobIntegration(), JobSetIntegration()]
