"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims already in use."""
