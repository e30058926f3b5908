"""Admission checks in the agent: the controller interface, the runner that keeps check states
and makes the Admitted transition, and the check controllers shipped with the agent.

`base` defines `AdmissionCheckController` (a `controller_name`, the resources it `watches`,
and `decide(workload, check, facts) -> CheckDecision`, which may carry actions: objects to
create or delete, limited to what the controller `writes`); `runner.AdmissionCheckRunner` runs
any number of them. Shipped: `node_capacity.NodeCapacityCheck` (`mkq.dev/node-capacity`) and
`provisioning.ProvisioningRequestCheck` (Kueue's `kueue.x-k8s.io/provisioning-request`, which
asks a cluster autoscaler for nodes through ProvisioningRequests). `states` holds the
status.admissionChecks transitions every writer uses.
"""
