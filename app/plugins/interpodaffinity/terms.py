"""Processed pod (anti-)affinity terms: ``fwk.AffinityTerm`` and the affinity half of ``framework.PodInfo``.

Each pod's terms are parsed once and cached in ``PodInfo.extra`` (:func:`pod_info_terms`), as
kube-scheduler keeps them in its PodInfo. The incoming pod's terms get their ``namespaceSelector``
resolved against namespace labels per cycle (:func:`merge_namespaces`), which is what
``mergeAffinityTermNamespacesIfNotEmpty`` does upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.api.objects import Pod, PodAffinity, PodAffinityTerm
from app.api.selectors import LabelSelector, Requirement
from app.api.validation import invalid, label_key_errors, label_value_errors
from app.framework.interfaces import ObjectLister
from app.framework.types import PodInfo

EXTRA_KEY = "InterPodAffinity"
"""Where a PodInfo's parsed terms are cached in ``PodInfo.extra``."""

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every Namespace, valued with its name."""

_EMPTY: Mapping[str, str] = {}


class AffinityTerm:
    """``fwk.AffinityTerm``: namespaces, label selector, topology key and namespace selector.

    ``selector`` / ``namespace_selector`` None stand for ``labels.Nothing()`` (what
    ``LabelSelectorAsSelector`` makes of a nil selector): they match nothing.
    """

    __slots__ = ("namespace_selector", "namespaces", "selector", "topology_key")

    def __init__(
        self,
        namespaces: frozenset[str],
        selector: LabelSelector | None,
        topology_key: str,
        namespace_selector: LabelSelector | None,
    ) -> None:
        self.namespaces = namespaces
        self.selector = selector
        self.topology_key = topology_key
        self.namespace_selector = namespace_selector

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """``AffinityTerm.Matches``: the pod's namespace is selected and its labels match.

        ``ns_labels`` are the labels of ``pod``'s namespace; None is Go's nil set.
        """
        if pod.namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(ns_labels or _EMPTY)
        ):
            return self.selector is not None and self.selector.matches(pod.labels)
        return False

    def __repr__(self) -> str:
        return f"AffinityTerm(ns={sorted(self.namespaces)}, key={self.topology_key!r})"


class MergedAffinityTerm(AffinityTerm):
    """An incoming pod's term with its namespaceSelector merged into the namespaces.

    Upstream lists the Namespaces matching the selector into ``Namespaces`` once per cycle; here a
    namespace is looked up when a pod of it is first matched, and the answer memoized, which selects
    the same pods without listing every namespace. Upstream's merge takes the term by value, so its
    ``NamespaceSelector`` is never replaced by ``Nothing()``, and ``Matches(pod, nil)`` keeps
    testing the selector against an empty label set: a selector that an empty set satisfies
    (``NotIn``, ``DoesNotExist``) thus selects every namespace. That is reproduced on purpose
    (``_selects_all``) since it decides placements in kube-scheduler v1.36.
    """

    __slots__ = ("_labels_of", "_selected", "_selects_all")

    def __init__(self, term: AffinityTerm, labels_of: Callable[[str], Mapping[str, str]]) -> None:
        super().__init__(term.namespaces, term.selector, term.topology_key, term.namespace_selector)
        self._labels_of = labels_of
        self._selected: dict[str, bool] = {}
        sel = term.namespace_selector
        self._selects_all = sel is not None and sel.matches(_EMPTY)

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None = None) -> bool:
        """Whether ``pod`` matches; ``ns_labels`` is ignored, namespaces being resolved already."""
        selector = self.selector
        if selector is None:
            return False
        ns = pod.namespace
        if not (ns in self.namespaces or self._selects_all):
            selected = self._selected.get(ns)
            if selected is None:
                sel = self.namespace_selector
                selected = sel is not None and sel.matches(self._labels_of(ns))
                self._selected[ns] = selected
            if not selected:
                return False
        return selector.matches(pod.labels)


@dataclass(slots=True, frozen=True)
class WeightedAffinityTerm:
    """``fwk.WeightedAffinityTerm``: a preferred term with its weight."""

    term: AffinityTerm
    weight: int


@dataclass(slots=True, frozen=True)
class PodAffinityTerms:
    """The four term lists of ``framework.PodInfo``; ``error`` is ``NewPodInfo``'s parse error.

    A list whose terms failed to parse is empty, as upstream leaves it nil.
    """

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    error: str | None = None


NO_TERMS = PodAffinityTerms()


def aggregate_message(messages: Sequence[str]) -> str:
    """``utilerrors.Aggregate.Error()``: duplicates dropped, ``[a, b]`` when several."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _requirement_errors(key: str, values: Sequence[str]) -> list[str]:
    """``labels.NewRequirement``'s checks beyond API parsing: key, then each value."""
    errs: list[str] = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(str(invalid("key", key, "; ".join(key_errs))))
    for j, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(str(invalid(f"values[{j}][{key}]", v, "; ".join(value_errs))))
    return errs


def _selector_error(raw: object) -> str | None:
    """``LabelSelectorAsSelector``'s error for a raw selector: the first bad requirement's aggregate.

    Read from the raw object because the parsed requirements keep values as sets, and the error
    paths index the values in their written order.
    """
    if not isinstance(raw, Mapping):
        return None
    match_labels = raw.get("matchLabels") or {}
    if isinstance(match_labels, Mapping):
        for k, v in match_labels.items():
            errs = _requirement_errors(str(k), [str(v)])
            if errs:
                return aggregate_message(errs)
    exprs = raw.get("matchExpressions") or []
    if isinstance(exprs, list):
        for e in exprs:
            if not isinstance(e, Mapping):
                continue
            values = e.get("values") or []
            errs = _requirement_errors(str(e.get("key", "")), [str(v) for v in values])
            if errs:
                return aggregate_message(errs)
    return None


def _with_label_keys(term: PodAffinityTerm, pod_labels: Mapping[str, str]) -> LabelSelector | None:
    """The label selector with matchLabelKeys (``In``) and mismatchLabelKeys (``NotIn``) merged.

    In v1.36 the scheduler never reads these fields: the API server merges them into the
    labelSelector when the pod is created (MatchLabelKeysInPodAffinity, GA and locked on;
    ``applyMatchLabelKeysAndMismatchLabelKeys``). Pods berth reads from a state file never went
    through an API server, so the merge is done here, skipping requirements already present so that
    a pod the API server did merge is left as it is. A nil selector is left nil (it matches nothing).
    """
    selector = term.label_selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    reqs = list(selector.requirements)
    for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            value = pod_labels.get(key)
            if value is None:
                continue
            r = Requirement(key, op, frozenset((value,)))
            if r not in reqs:
                reqs.append(r)
    return LabelSelector(tuple(reqs))


def _new_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """``newAffinityTerm``; namespaces default to the pod's own when neither field is set."""
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    return AffinityTerm(
        namespaces, _with_label_keys(term, pod.labels), term.topology_key, term.namespace_selector
    )


def _raw_terms(pod: Pod, field_name: str, kind: str) -> list[Any]:
    """The raw ``spec.affinity.<field_name>.<kind>`` list, for error messages."""
    spec = pod.raw.get("spec") if isinstance(pod.raw, Mapping) else None
    affinity = spec.get("affinity") if isinstance(spec, Mapping) else None
    section = affinity.get(field_name) if isinstance(affinity, Mapping) else None
    items = section.get(kind) if isinstance(section, Mapping) else None
    return items if isinstance(items, list) else []


def _term_error(raw: object) -> str | None:
    """The parse error of one raw PodAffinityTerm: labelSelector first, then namespaceSelector."""
    if not isinstance(raw, Mapping):
        return None
    return _selector_error(raw.get("labelSelector")) or _selector_error(raw.get("namespaceSelector"))


def _first_error(raws: list[Any], preferred: bool) -> str | None:
    for raw in raws:
        if preferred:
            raw = raw.get("podAffinityTerm") if isinstance(raw, Mapping) else None
        err = _term_error(raw)
        if err is not None:
            return err
    return None


def parse_pod_terms(pod: Pod) -> PodAffinityTerms:
    """``PodInfo.Update``'s term parsing: the four lists, and the aggregated error of those that failed."""
    affinity: PodAffinity | None = pod.pod_affinity
    anti: PodAffinity | None = pod.pod_anti_affinity
    if affinity is None and anti is None:
        return NO_TERMS
    errors: list[str] = []
    lists: list[tuple[Any, ...]] = []
    for label, section, field_name, preferred in (
        ("requiredAffinityTerms", affinity, "podAffinity", False),
        ("requiredAntiAffinityTerms", anti, "podAntiAffinity", False),
        ("preferredAffinityTerms", affinity, "podAffinity", True),
        ("preferredAntiAffinityTerms", anti, "podAntiAffinity", True),
    ):
        if section is None or not (section.preferred if preferred else section.required):
            lists.append(())
            continue
        kind = (
            "preferredDuringSchedulingIgnoredDuringExecution"
            if preferred
            else "requiredDuringSchedulingIgnoredDuringExecution"
        )
        err = _first_error(_raw_terms(pod, field_name, kind), preferred)
        if err is not None:
            errors.append(f"{label}: {err}")
            lists.append(())
        elif preferred:
            lists.append(
                tuple(WeightedAffinityTerm(_new_term(pod, w.term), w.weight) for w in section.preferred)
            )
        else:
            lists.append(tuple(_new_term(pod, t) for t in section.required))
    return PodAffinityTerms(
        required_affinity=lists[0],
        required_anti_affinity=lists[1],
        preferred_affinity=lists[2],
        preferred_anti_affinity=lists[3],
        error=aggregate_message(errors) if errors else None,
    )


def pod_info_terms(pod_info: PodInfo) -> PodAffinityTerms:
    """The pod's parsed terms, computed on first use and cached in ``pod_info.extra``."""
    terms = pod_info.extra.get(EXTRA_KEY)
    if isinstance(terms, PodAffinityTerms):
        return terms
    terms = parse_pod_terms(pod_info.pod)
    pod_info.extra[EXTRA_KEY] = terms
    return terms


class NamespaceLabels:
    """Namespace labels for namespaceSelector matching, read from the cluster's Namespace objects.

    berth's cache holds no Namespaces, so they come from the raw objects, indexed on first use (at
    most once per cycle). A namespace without an object has the label the API server sets on every
    Namespace, ``kubernetes.io/metadata.name=<name>``; the label is also forced onto objects, as the
    API server's defaulting does.
    """

    __slots__ = ("_by_name", "_objects")

    def __init__(self, objects: ObjectLister) -> None:
        self._objects = objects
        self._by_name: dict[str, Mapping[str, str]] | None = None

    def _index(self) -> dict[str, Mapping[str, str]]:
        by_name: dict[str, Mapping[str, str]] = {}
        for obj in self._objects.list_cluster("Namespace"):
            meta = obj.get("metadata") or {}
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str) or not name:
                continue
            raw_labels = meta.get("labels") or {}
            labels = (
                {str(k): str(v) for k, v in raw_labels.items()} if isinstance(raw_labels, Mapping) else {}
            )
            labels[METADATA_NAME_LABEL] = name
            by_name[name] = labels
        return by_name

    def get(self, namespace: str) -> Mapping[str, str]:
        """The labels of ``namespace`` (``GetNamespaceLabelsSnapshot``)."""
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = self._index()
        labels = by_name.get(namespace)
        if labels is None:
            labels = {METADATA_NAME_LABEL: namespace}
            by_name[namespace] = labels
        return labels


def merge_namespaces(terms: Sequence[AffinityTerm], namespaces: NamespaceLabels) -> tuple[AffinityTerm, ...]:
    """The incoming pod's terms with namespaceSelectors merged (``mergeAffinityTermNamespacesIfNotEmpty``).

    A term without a namespaceSelector (Nothing) is kept as is: the merge adds no namespace to it.
    """
    return tuple(t if t.namespace_selector is None else MergedAffinityTerm(t, namespaces.get) for t in terms)


def merge_weighted_namespaces(
    terms: Sequence[WeightedAffinityTerm], namespaces: NamespaceLabels
) -> tuple[WeightedAffinityTerm, ...]:
    """:func:`merge_namespaces` for preferred terms."""
    return tuple(
        w
        if w.term.namespace_selector is None
        else WeightedAffinityTerm(MergedAffinityTerm(w.term, namespaces.get), w.weight)
        for w in terms
    )


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """``podMatchesAllAffinityTerms``: False for no terms; incoming terms need no namespace labels."""
    if not terms:
        return False
    for t in terms:  # noqa: SIM110 - a plain loop: this runs per existing pod
        if not t.matches(pod, None):
            return False
    return True
