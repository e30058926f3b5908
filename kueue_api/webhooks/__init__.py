"""Kueue's admission webhooks, as values: what a webhook answers an AdmissionReview with
(`review`), the defaulting of jobs and pods at creation (`mutation`), the refusal of invalid
objects (`validation`), and the HTTPS server that serves them (`server`). The agent and the
manager each run a server with their own view of the cluster."""
