"""Nodes grouped by zone, listed round-robin across zones (``backend/cache/node_tree.go``)."""

from __future__ import annotations

from app.api.objects import LABEL_REGION, LABEL_REGION_BETA, LABEL_ZONE, LABEL_ZONE_BETA, Node


def zone_key(node: Node) -> str:
    """``utilnode.GetZoneKey``: region + ":\\x00:" + zone, "" when neither label is set.

    As component-helpers' ``GetZoneKey``, the deprecated ``failure-domain.beta`` label wins when
    present (even if empty); the ``topology.kubernetes.io`` label is only the fallback.
    """
    labels = node.labels
    zone = labels[LABEL_ZONE_BETA] if LABEL_ZONE_BETA in labels else labels.get(LABEL_ZONE, "")
    region = labels[LABEL_REGION_BETA] if LABEL_REGION_BETA in labels else labels.get(LABEL_REGION, "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Zones in insertion order, nodes within a zone in insertion order."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    @property
    def num_nodes(self) -> int:
        """How many nodes the tree holds."""
        return len(self._zone_of)

    def add(self, node: Node) -> None:
        """Add a node to its zone (no-op if already there)."""
        if node.name in self._zone_of:
            return
        zone = zone_key(node)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone

    def remove(self, name: str) -> None:
        """Remove a node; an emptied zone disappears."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def update(self, old: Node | None, new: Node) -> None:
        """A zone change moves the node to the end of its new zone."""
        old_zone = self._zone_of.get(new.name)
        if old_zone is not None and old_zone == zone_key(new):
            return
        self.remove(new.name)
        self.add(new)

    def list(self) -> list[str]:
        """Round-robin over zones: index 0 of each zone, then index 1, ..."""
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        out: list[str] = []
        depth = 0
        while len(out) < len(self._zone_of):
            for names in zones:
                if depth < len(names):
                    out.append(names[depth])
            depth += 1
        return out
