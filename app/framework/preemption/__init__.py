"""Preemption (``pkg/scheduler/framework/preemption``): the Evaluator that DefaultPreemption runs.

:mod:`.preemption` has the Evaluator (Preempt, DryRunPreemption, SelectCandidate) and
pickOneNodeForPreemption, :mod:`.pdb` the PodDisruptionBudget checks, :mod:`.executor` what
happens to the chosen candidate (victims evicted through the handle's ClusterActions, lower
priority nominations on the node cleared), :mod:`.util` MoreImportantPod and start times.
"""
