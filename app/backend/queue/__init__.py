"""The scheduling queue (``backend/queue``): :class:`~.scheduling_queue.PriorityQueue`, its
sub-queues, the informer-side event helpers (:mod:`.events`) and the nominator."""
