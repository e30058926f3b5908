"""The command line and the demo's composition root: it wires the parts together, nothing more."""
