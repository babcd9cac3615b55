"""VolumeZone: a pod's bound PersistentVolumes' zone and region labels must match the node's."""
