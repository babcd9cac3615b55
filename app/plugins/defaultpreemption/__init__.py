"""The DefaultPreemption plugin."""
