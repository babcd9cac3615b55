"""NodeVolumeLimits: CSI attach limits reported in CSINode objects."""
