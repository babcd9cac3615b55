"""The InterPodAffinity plugin."""
