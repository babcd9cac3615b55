"""berth: a Kubernetes scheduler in Python with kube-scheduler v1.36.3 semantics."""

__version__ = "0.1.0"
