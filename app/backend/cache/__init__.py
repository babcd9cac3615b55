"""The scheduler cache: NodeInfos, assumed pods, the zone-interleaved node tree and snapshots."""
