"""Admission checks in the agent: the controller interface, the runner that keeps check states
and makes the Admitted transition, and the check controllers shipped with the agent.

`base` defines `AdmissionCheckController` (a `controller_name`, the resources it `watches`,
and `decide(workload, check, facts) -> CheckDecision`); `runner.AdmissionCheckRunner` runs any
number of them; `node_capacity.NodeCapacityCheck` (`mkq.dev/node-capacity`) is the example.
`states` holds the status.admissionChecks transitions every writer uses.
"""
