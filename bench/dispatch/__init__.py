"""Dispatch benchmark: N Jobs through the manager's REST API onto kubesim workers with agents."""
