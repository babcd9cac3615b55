"""``berth run``: the standalone, leader-elected scheduler (kube-scheduler's Setup, Run, ScheduleOne).

- :mod:`.setup` builds everything from the options (configuration, clients, informers, cache,
  queue, profiles, event broadcaster, leader election) without starting anything.
- :mod:`.run` starts it in kube-scheduler's order and shuts it down.
- :mod:`.scheduler` is the loop: pop, scheduling cycle, asynchronous binding cycle, failures.
- :mod:`.handlers` feeds the informers' events to the cache and the queue.
- :mod:`.traces` keeps each pod's last decision for ``/debug/pods``; :mod:`.endpoints` serves it.
"""
