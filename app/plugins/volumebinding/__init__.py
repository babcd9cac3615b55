"""VolumeBinding: binds a pod's unbound PersistentVolumeClaims on the node chosen for it."""
