"""The multi-cluster manager service."""
