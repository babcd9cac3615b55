"""Slim typed views of the Kubernetes objects berth reads, parsed once from raw JSON."""
