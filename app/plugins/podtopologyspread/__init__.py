"""The PodTopologySpread plugin."""
