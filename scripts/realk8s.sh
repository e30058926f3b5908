#!/usr/bin/env bash
# Real Kubernetes control planes on loopback ports, built from their Go modules and cached
# (scripts/realk8s/*/go.mod pin the versions; the first build takes several minutes).
#   bash scripts/realk8s.sh up DIR NAME...   start one cluster per NAME; writes DIR/NAME.kubeconfig
#   bash scripts/realk8s.sh down DIR         stop every process of DIR's clusters
#   bash scripts/realk8s.sh build            build (or find cached) the programs
# Needs Go 1.26+ on PATH; kubectl (Debian's kubectl) to look at the clusters.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bash "$repo/scripts/setup.sh"
exec "$repo/.venv/bin/mkq" realk8s "$@"
