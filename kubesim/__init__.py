"""An emulated Kubernetes cluster: API server plus simulated nodes, scheduler, kubelet and job controller."""
