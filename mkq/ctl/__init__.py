"""`mkq ctl`: kueuectl's everyday verbs (Kueue's `cmd/kueuectl/app/`) on one cluster through its
kubeconfig, or on every cluster through the manager's REST API.

The pieces: `tables` prints as kubectl's printers do, `columns` holds kueuectl's list columns,
`describe` kubectl's generic describer, `objects` the bodies kueuectl's create verbs build from
their flags, `positions` the engine's queue order, `cluster` and `manager_api` the two sources.
"""
