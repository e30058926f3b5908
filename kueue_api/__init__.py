"""Typed models of Kueue's v1beta2 API and the core Kubernetes objects the project reads."""
