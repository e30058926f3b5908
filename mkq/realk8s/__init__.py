"""Real Kubernetes control planes on this machine: kube-apiserver, etcd, kube-controller-manager,
kube-scheduler and KWOK nodes, built from their Go modules (`scripts/realk8s/`) and cached.

`bash scripts/realk8s.sh up DIR NAME...` starts them; the e2e suite's real backend, the fidelity
suite and `mkq demo --backend real` use `start_clusters` here.
"""
