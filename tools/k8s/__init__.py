"""The Kubernetes manifests checked against a real API server (tools/k8s/README.md)."""
