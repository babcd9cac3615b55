"""In-tree scheduler plugins (kube-scheduler v1.36 semantics)."""
