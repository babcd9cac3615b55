"""The NodeAffinity plugin."""
